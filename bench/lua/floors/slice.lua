-- The server calls of the Lua backend's RL.SLICE on a key it holds, within
-- one slice, and nothing else: no argument read, nothing decided, a
-- constant state and reply (bench/lua_floors.py). The key holds the header
-- and 60 slices, as a hot key of 60 slices does; the slice's count is
-- written, the expiry read. The first call makes the key.
local key = KEYS[1]
local t = redis.call('TIME')
if #redis.call('HGETALL', key) == 0 then
  local h = {'HSET', key, 'S', '1000000|60|1795896000059'}
  for j = 1795896000000, 1795896000059 do h[#h + 1] = j; h[#h + 1] = '500' end
  redis.call(unpack(h))
  redis.call('PEXPIREAT', key, string.format('%d', t[1] * 1000 + 60000))
end
redis.call('HSET', key, '1795896000059', '501')
redis.call('PEXPIRETIME', key)
return {0, 1000000, 999999, -1, 1}
