local entry, arg = 'several', true -- RL.ALLOW: prelude.lua follows
