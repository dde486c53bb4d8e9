-- The Lua backend's RL.SLIDE on a hot key, and nothing else: its usual
-- call (limit window, quantity 1, no PRECISION, no MS) allowed, on the
-- backend's own list layout (clients/lua/README.md), written as one
-- straight block: no function, no other case, no fall-back to the full
-- code (bench/lua_floors.py). Any other call answers an error. It checks
-- its arguments, reads the header and the entries that left the window,
-- drops them, records the new unit and writes the header, as the backend
-- does, with the backend's server calls. It is what RL.SLIDE's work costs
-- on this layout at best: a backend answering every call cannot be
-- cheaper on this one.
local key = KEYS[1]
local ls, ws = ARGV[2], ARGV[3] -- after the head (ARGV[1], '': the server's TIME)
if ARGV[1] ~= '' or ARGV[4] or not (#ls > 0 and #ls <= 13 and #ws > 0 and #ws <= 13 and string.find(ls .. ws, '^%d+$')) then
  return redis.error_reply('ERR not the hot path')
end
local limit, win, q = ls + 0, ws + 0, 1
if not (limit >= 1 and limit <= 1000000 and win >= 1 and win <= 315360000) then
  return redis.error_reply('ERR not the hot path')
end
local W = win * 1000000
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
-- The header: S|base|clock|first|joined|units|entries|oldest.
local h = redis.pcall('LINDEX', key, '0')
local base, clock, first, joined, units, cnt, oldest
if h then
  if type(h) == 'string' then
    base, clock, first, joined, units, cnt, oldest = string.match(h, '^S|(%d+)|(%d+)|(%d+)|([01])|(%d+)|(%d+)|(%d+)$')
  end
  if base == nil then return redis.error_reply('ERR not the hot path') end
  base, clock, first, joined, units, cnt = base + 0, clock + 0, first + 0, joined == '1', units + 0, cnt + 0
  oldest = base + oldest
else
  clock, first, joined, units, cnt = 0, 0, false, 0, 0
end
local at = now
if cnt > 0 and clock > now then at = clock end
-- The entries that left the window (at - W, at], read in growing chunks.
local cutoff = at - W
local expired, gone, live = 0, 0, nil
if cnt > 0 then
  if cutoff >= 0 and clock <= cutoff then
    expired, gone = cnt, units
  elseif cutoff >= 0 and oldest <= cutoff then
    local from, size = 1, 4
    while live == nil and from <= cnt do
      local last = from + size - 1
      if last > cnt then last = cnt end
      local chunk = redis.call('LRANGE', key, string.format('%d', from), string.format('%d', last))
      for j = 1, #chunk do
        local o, c = string.match(chunk[j], '^(%d+):?(%d*)$')
        if o == nil then return redis.error_reply('ERR not the hot path') end
        local x = base + o
        if x > cutoff then live = x; break end
        expired, gone = expired + 1, gone + (c == '' and 1 or c + 0)
      end
      from = last + 1
      if size < 1024 then size = size * 4 end
    end
  else
    live = oldest
  end
end
local used = units - gone
if used + q > limit or (cnt - expired > 0 and at == clock) then
  return redis.error_reply('ERR not the hot path')
end
-- Allowed: one entry at `at`, the header over the front.
local kept = cnt - expired
if expired > 0 and used <= kept then joined = false end
if base == nil then base = at end
if live == nil then live = at end
local entry = string.format('%d', at - base)
local header = string.format('S|%d|%d|%d|%s|%d|%d|%d', base, at, first, joined and '1' or '0', used + q, kept + 1,
  live - base)
local r = (at + W - now) % 1000000
local five = {0, limit, limit - used - q, -1, (at + W - now - r) / 1000000 + (r > 0 and 1 or 0)}
local e = (at + W) % 1000
local ms = string.format('%d', (at + W - e) / 1000 + (e > 0 and 1 or 0))
if h then
  if expired > 0 then redis.call('LTRIM', key, string.format('%d', expired), '-1') end
  redis.call('RPUSH', key, entry)
  redis.call('LSET', key, '0', header)
  if redis.call('PEXPIREAT', key, ms, 'GT') == 0 and redis.call('PEXPIRETIME', key) == -1 then
    redis.call('PEXPIREAT', key, ms)
  end
else
  redis.call('RPUSH', key, header, entry)
  redis.call('PEXPIREAT', key, ms)
end
return five
