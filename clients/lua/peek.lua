#!lua flags=no-writes
return several(false)
