-- The server calls of the Lua backend's RL.THROTTLE on a key it holds, and
-- nothing else: no argument read, nothing decided, a constant state and
-- reply (bench/lua_floors.py). A script making these calls cannot cost
-- less than this one.
local key = KEYS[1]
local t = redis.call('TIME')
redis.call('GET', key)
redis.call('PEXPIRETIME', key)
redis.call('SET', key, 'G|1795896000123456000|0|1000000', 'PXAT', t[1] * 1000 + 60000)
return {0, 1000000, 999999, -1, 1}
