-- The server calls of the Lua backend's RL.THROTTLE on a key it holds, and
-- nothing else: no argument read, nothing decided, a constant state and
-- reply (bench/lua_floors.py). A script making these calls cannot cost
-- less than this one. The expiry moves to the next millisecond when
-- later, as a hot key's TAT (now + 1 µs) moves it.
local key = KEYS[1]
local t = redis.call('TIME')
redis.call('GET', key)
local at = redis.call('PEXPIRETIME', key)
redis.call('SET', key, 'G|1795896000123456000|0|1000000', 'KEEPTTL')
local ms = t[1] * 1000 + (t[2] - t[2] % 1000) / 1000 + 1
if at < ms then redis.call('PEXPIREAT', key, string.format('%d', ms)) end
return {0, 1000000, 999999, -1, 1}
