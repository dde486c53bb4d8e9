#!lua flags=no-writes
local entry, arg = 'inspect', nil -- RL.INSPECT: prelude.lua follows
