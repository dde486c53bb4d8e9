#!lua flags=no-writes
return run('inspect')
