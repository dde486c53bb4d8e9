#!lua flags=no-writes
return inspect()
