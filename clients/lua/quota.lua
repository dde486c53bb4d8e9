local entry, arg = 'limiter', 'QUOTA' -- RL.QUOTA: prelude.lua follows
