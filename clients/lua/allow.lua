return several(true)
