#!lua flags=no-writes
return L().several(false)
