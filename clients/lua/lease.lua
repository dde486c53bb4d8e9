local entry, arg = 'limiter', 'LEASE' -- RL.LEASE: prelude.lua follows
