-- The server calls of the Lua backend's RL.SLIDE on a full log (one entry
-- leaves the window as one joins it, as on a hot key), and nothing else:
-- no argument read, nothing decided, constant entries and reply
-- (bench/lua_floors.py). The header is read; the front entries are read
-- and the one that left is trimmed with the old header (LTRIM from index
-- 1), the new entry pushed, the header written over the new front, the
-- expiry moved later.
local key = KEYS[1]
local header = 'S|1795896000000000|1795896000123456|0|0|2|2|0'
local t = redis.call('TIME')
if not redis.call('LINDEX', key, '0') then redis.call('RPUSH', key, header, '0', '1') end
redis.call('LRANGE', key, '1', '4')
redis.call('LTRIM', key, '1', '-1')
redis.call('RPUSH', key, '123456')
redis.call('LSET', key, '0', header)
redis.call('PEXPIREAT', key, string.format('%d', t[1] * 1000 + 60000), 'GT')
return {0, 1000000, 999999, -1, 1}
