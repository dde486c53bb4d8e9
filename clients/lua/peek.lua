#!lua flags=no-writes
return run('several', false)
