#!lua flags=no-writes
return (G or lib()).several(false)
