-- Token bucket in a HASH: fields `tokens` (may be fractional) and `ts` (the
-- server's time of the last update, microseconds). The bucket holds at most
-- `capacity` tokens and refills `capacity` tokens per `window`; a request
-- takes `quantity` tokens or is limited (and then changes nothing).
--
-- KEYS[1]  the limiter's key
-- ARGV[1]  capacity (the burst; also the refill per window)
-- ARGV[2]  window, milliseconds
-- ARGV[3]  quantity (optional, default 1; 0 peeks)
-- Reply: {limited, capacity, remaining, retry_after_ms (-1 when allowed), reset_after_ms}
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local capacity = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local quantity = tonumber(ARGV[3] or '1')
local rate = capacity / (window_ms * 1000) -- tokens per microsecond

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local state = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens, ts = capacity, now
elseif now > ts then
  tokens = math.min(capacity, tokens + (now - ts) * rate)
  ts = now
end

-- Milliseconds until the bucket holds `level` tokens again.
local function ms_to(level)
  if tokens >= level then return 0 end
  return math.ceil((level - tokens) / rate / 1000)
end

if quantity > capacity then
  return {1, capacity, math.floor(tokens), -1, ms_to(capacity)}
end

if quantity <= tokens then
  if quantity > 0 then
    tokens = tokens - quantity
    redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.0f', ts))
    redis.call('PEXPIRE', key, math.max(1, ms_to(capacity)))
  end
  return {0, capacity, math.floor(tokens), -1, ms_to(capacity)}
end

return {1, capacity, math.floor(tokens), math.max(1, ms_to(quantity)), ms_to(capacity)}
