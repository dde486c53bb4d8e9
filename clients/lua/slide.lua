local entry, arg = 'limiter', 'SLIDE' -- RL.SLIDE: prelude.lua follows
