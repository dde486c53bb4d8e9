-- Fixed window: INCRBY a counter, and PEXPIRE it when the increment created it
-- (the window starts at the key's first request). The classic pattern: a
-- limited request is counted too, which only makes the limiter stricter; at
-- most `limit` units are admitted per window (up to 2 x limit across a window
-- boundary, the known weakness of fixed windows).
--
-- KEYS[1]  the limiter's key
-- ARGV[1]  limit (units per window)
-- ARGV[2]  window, milliseconds
-- ARGV[3]  quantity (optional, default 1; 0 peeks)
-- Reply: {limited, limit, remaining, retry_after_ms (-1 when allowed), reset_after_ms}
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local quantity = tonumber(ARGV[3] or '1')

local count, ttl
if quantity == 0 then
  count = tonumber(redis.call('GET', key) or '0')
  ttl = count > 0 and redis.call('PTTL', key) or 0
else
  count = redis.call('INCRBY', key, quantity)
  if count == quantity then
    redis.call('PEXPIRE', key, window_ms)
    ttl = window_ms
  else
    ttl = redis.call('PTTL', key)
    if ttl < 0 then -- no expiry (left by an interrupted caller): set one
      redis.call('PEXPIRE', key, window_ms)
      ttl = window_ms
    end
  end
end
ttl = math.max(0, ttl)

if quantity > 0 and count > limit then
  local retry = ttl
  if quantity > limit then retry = -1 end
  return {1, limit, 0, retry, ttl}
end
return {0, limit, math.max(0, limit - count), -1, ttl}
