-- Counting semaphore on a sorted set: one member per lease, its id, scored
-- by its expiry (the server's time, milliseconds). Written for this
-- benchmark as the usual pattern doing RL.LEASE's job: expired leases are
-- removed, a holder renews its own lease, a new one is taken while fewer
-- than `limit` are held. Every lease weighs one unit, and a key's leases
-- share one ttl (the key expires with its latest lease).
--
-- KEYS[1]  the semaphore's key
-- ARGV[1]  limit (leases held at once)
-- ARGV[2]  ttl, milliseconds
-- ARGV[3]  the lease's id
-- ARGV[4]  quantity (optional, default 1; 0 peeks)
-- Reply: {limited, limit, remaining, retry_after_ms (-1 when allowed), reset_after_ms}
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local id = ARGV[3]
local quantity = tonumber(ARGV[4] or '1')

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local held = redis.call('ZCARD', key)
local mine = redis.call('ZSCORE', key, id)
local others = held - (mine and 1 or 0)

local function reset_after()
  if held == 0 then return 0 end
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return math.max(0, tonumber(last[2]) - now)
end

if quantity == 0 then
  return {0, limit, math.max(0, limit - held), -1, reset_after()}
end
if quantity > 1 or others + 1 > limit then
  if quantity > 1 then return {1, limit, math.max(0, limit - held), -1, reset_after()} end
  -- Limited: the first lease to expire frees a place.
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return {1, limit, math.max(0, limit - held), math.max(1, tonumber(first[2]) - now), reset_after()}
end
redis.call('ZADD', key, now + ttl, id)
redis.call('PEXPIRE', key, ttl)
return {0, limit, limit - others - 1, -1, ttl}
