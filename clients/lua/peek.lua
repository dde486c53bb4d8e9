return several(false)
