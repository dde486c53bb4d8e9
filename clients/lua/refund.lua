local entry, arg = 'refund', nil -- RL.REFUND: prelude.lua follows
