  end
  return lib()[entry](arg)
end
