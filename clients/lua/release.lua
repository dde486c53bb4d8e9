local entry, arg = 'release', nil -- RL.RELEASE: prelude.lua follows
