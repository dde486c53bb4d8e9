-- Sliding log on a sorted set: one member per admitted unit, scored by the
-- server's time in microseconds. Exact: at most `limit` units are admitted in
-- any half-open window (now - window, now]. Only admitted units are recorded.
--
-- KEYS[1]  the limiter's key
-- ARGV[1]  limit (units per window)
-- ARGV[2]  window, milliseconds
-- ARGV[3]  quantity (optional, default 1; 0 peeks)
-- Reply, like RL.SLIDE ... MS:
--   {limited, limit, remaining, retry_after_ms (-1 when allowed), reset_after_ms}
--
-- Members must be unique, or two units admitted in the same microsecond would
-- collapse into one. Each member is "<time>-<random>-<i>"; on Redis 7 the
-- script PRNG is not reseeded per call, and effects replication (the default
-- since 7.0, requested explicitly below for older servers) replicates the
-- ZADD itself, so the random part is safe.
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local quantity = tonumber(ARGV[3] or '1')
local window = window_ms * 1000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function fmt(x) return string.format('%.0f', x) end
local function ms_until(us) return math.max(0, math.ceil((us - now) / 1000)) end

-- A unit recorded at s is counted while s > now - window.
redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(now - window))
local used = redis.call('ZCARD', key)

local function reset_after()
  if used == 0 then return 0 end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return ms_until(tonumber(newest[2]) + window)
end

if quantity > limit then
  return {1, limit, math.max(0, limit - used), -1, reset_after()}
end

if used + quantity <= limit then
  if quantity == 0 then
    return {0, limit, limit - used, -1, reset_after()}
  end
  local stamp = fmt(now)
  local tag = stamp .. '-' .. math.random(0, 2147483646) .. '-'
  local i = 1
  while i <= quantity do
    local args = {}
    local last = math.min(quantity, i + 499)
    for j = i, last do
      args[#args + 1] = stamp
      args[#args + 1] = tag .. j
    end
    redis.call('ZADD', key, unpack(args))
    i = last + 1
  end
  redis.call('PEXPIRE', key, window_ms)
  return {0, limit, limit - used - quantity, -1, window_ms}
end

-- Limited: the oldest `need` counted units must leave first.
local need = used + quantity - limit
local nth = redis.call('ZRANGE', key, need - 1, need - 1, 'WITHSCORES')
local retry = math.max(1, ms_until(tonumber(nth[2]) + window))
return {1, limit, math.max(0, limit - used), retry, reset_after()}
