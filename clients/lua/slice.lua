local entry, arg = 'limiter', 'SLICE' -- RL.SLICE: prelude.lua follows
