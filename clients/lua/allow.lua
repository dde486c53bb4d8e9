return L().several(true)
