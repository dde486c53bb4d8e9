#!lua flags=no-writes
return L().inspect()
