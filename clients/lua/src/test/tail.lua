  end
  local G = lib()
  if entry == 'lib' then return arg(G) end -- test code: clients/conformance/exact_throttle.lua
  return G[entry](arg)
end
