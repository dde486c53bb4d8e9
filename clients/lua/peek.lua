#!lua flags=no-writes
local entry, arg = 'several', false -- RL.PEEK: prelude.lua follows
