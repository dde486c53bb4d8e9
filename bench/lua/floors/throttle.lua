-- The server calls of the Lua backend's RL.THROTTLE on a key it holds, and
-- nothing else: no argument read, nothing decided, a constant state and
-- reply (bench/lua_floors.py). A script making these calls cannot cost
-- less than this one. The state is written with its expiry, the new TAT's
-- millisecond (a hot key's TAT is now + 1 µs).
local key = KEYS[1]
local t = redis.call('TIME')
redis.call('GET', key)
local ms = t[1] * 1000 + (t[2] - t[2] % 1000) / 1000 + 1
redis.call('SET', key, 'G|1795896000123456000', 'PXAT', string.format('%d', ms))
return {0, 1000000, 999999, -1, 1}
