-- GCRA in the style of go-redis/redis_rate: one string key holding the
-- theoretical arrival time (TAT), computed from the server's TIME inside the
-- script. `rate` units per `period`, at most `burst` units at once.
--
-- KEYS[1]  the limiter's key
-- ARGV[1]  burst (the capacity: this many units fit at once)
-- ARGV[2]  rate (units per period)
-- ARGV[3]  period, milliseconds
-- ARGV[4]  quantity (optional, default 1; 0 peeks)
-- Reply: {limited, burst, remaining, retry_after_ms (-1 when allowed), reset_after_ms}
--
-- Times are microseconds since 2023-11-14 (Unix 1,700,000,000 s), so that the
-- fractional TAT keeps sub-microsecond precision in a double.
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period_ms = tonumber(ARGV[3])
local quantity = tonumber(ARGV[4] or '1')

local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1700000000) * 1000000 + tonumber(t[2])

local emission = period_ms * 1000 / rate -- microseconds per unit
local tolerance = emission * burst
local increment = emission * quantity

local tat = tonumber(redis.call('GET', key))
if tat == nil or tat < now then tat = now end

local function ms(us) return math.max(0, math.ceil(us / 1000)) end
local function remaining(ahead)
  return math.max(0, math.min(burst, math.floor((tolerance - ahead) / emission)))
end

local new_tat = tat + increment
local allow_at = new_tat - tolerance
if increment > tolerance then
  return {1, burst, remaining(tat - now), -1, ms(tat - now)}
end
if now < allow_at then
  return {1, burst, remaining(tat - now), math.max(1, ms(allow_at - now)), ms(tat - now)}
end
if quantity == 0 then
  return {0, burst, remaining(tat - now), -1, ms(tat - now)}
end
local ttl = math.max(1, ms(new_tat - now))
redis.call('SET', key, string.format('%.17g', new_tat), 'PX', ttl)
return {0, burst, remaining(new_tat - now), -1, ttl}
