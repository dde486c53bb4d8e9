-- The server calls of the Lua backend's RL.QUOTA on a key it holds, within
-- a period, and nothing else: no argument read, nothing decided, a
-- constant state and reply (bench/lua_floors.py). The first call gives the
-- key an expiry, as the script's first call does.
local key = KEYS[1]
local t = redis.call('TIME')
redis.call('GET', key)
local at = redis.call('PEXPIRETIME', key)
redis.call('SET', key, 'Q|1|1795896000|1795899600|1795899600|1795896000123456|2|UTC', 'KEEPTTL')
if at < 0 then redis.call('PEXPIREAT', key, string.format('%d', t[1] * 1000 + 3600000)) end
return {0, 1000000, 999999, -1, 1}
