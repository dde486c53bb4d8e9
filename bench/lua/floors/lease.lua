-- The server calls of the Lua backend's RL.LEASE renewing the one lease of
-- a key it holds, and nothing else: no argument read, nothing decided, a
-- constant state and reply (bench/lua_floors.py). The first call makes
-- the key.
local key = KEYS[1]
local t = redis.call('TIME')
if #redis.call('HGETALL', key) == 0 then redis.call('HSET', key, 'L', '1') end
redis.call('HSET', key, '#lease-0000000001', '1795896001123456|1')
redis.call('PEXPIREAT', key, string.format('%d', t[1] * 1000 + 1000), 'GT')
return {0, 1000000, 999999, -1, 1}
