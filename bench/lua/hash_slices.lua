-- Sliding window of time slices in a HASH: one field per slice (the slice's
-- index, slices aligned to the Unix epoch), holding the units admitted in it.
-- A unit recorded in slice j is counted until slice j + slices + 1 begins (the
-- same rule as RL.SLICE), so never more than `limit` units are admitted in any
-- interval of length `window`. Only admitted units are counted.
--
-- KEYS[1]  the limiter's key
-- ARGV[1]  limit (units per window)
-- ARGV[2]  window, milliseconds
-- ARGV[3]  slices per window
-- ARGV[4]  quantity (optional, default 1; 0 peeks)
-- Reply, like RL.SLICE ... MS:
--   {limited, limit, remaining, retry_after_ms (-1 when allowed), reset_after_ms}
if redis.replicate_commands then redis.replicate_commands() end

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local slices = tonumber(ARGV[3])
local quantity = tonumber(ARGV[4] or '1')

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slice_us = window_ms * 1000 / slices
local current = math.floor(now / slice_us)
local oldest = current - slices

local function ms_until(us) return math.max(0, math.ceil((us - now) / 1000)) end
-- The moment slice j stops being counted.
local function leaves(j) return (j + slices + 1) * slice_us end

local h = redis.call('HGETALL', key)
local used, newest = 0, nil
local dead, live = {}, {}
for i = 1, #h, 2 do
  local j = tonumber(h[i])
  if j < oldest then
    dead[#dead + 1] = h[i]
  else
    local n = tonumber(h[i + 1])
    used = used + n
    live[#live + 1] = {j, n}
    if newest == nil or j > newest then newest = j end
  end
end

local function reset_after()
  if newest == nil then return 0 end
  return ms_until(leaves(newest))
end

if quantity > limit then
  return {1, limit, math.max(0, limit - used), -1, reset_after()}
end

if used + quantity <= limit then
  if quantity == 0 then
    return {0, limit, limit - used, -1, reset_after()}
  end
  if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
  redis.call('HINCRBY', key, string.format('%.0f', current), quantity)
  if newest == nil or current > newest then newest = current end
  local ttl = math.max(1, reset_after())
  redis.call('PEXPIRE', key, ttl)
  return {0, limit, limit - used - quantity, -1, ttl}
end

-- Limited: wait until enough of the oldest counted slices stop being counted.
table.sort(live, function(a, b) return a[1] < b[1] end)
local need = used + quantity - limit
local freed, retry = 0, 1
for _, slice in ipairs(live) do
  freed = freed + slice[2]
  if freed >= need then
    retry = math.max(1, ms_until(leaves(slice[1])))
    break
  end
end
return {1, limit, math.max(0, limit - used), retry, reset_after()}
