local entry, arg = 'limiter', 'THROTTLE' -- RL.THROTTLE: prelude.lua follows
