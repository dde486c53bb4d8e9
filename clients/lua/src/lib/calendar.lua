-- The calendar: the module's rules (src/core/quota/calendar.rs), on the
-- zone's offsets of the head. Local time: seconds since 1970-01-01 00:00
-- on the zone's clock (the instant t shows t + offset(t)). A period starts
-- whenever the local clock shows a unit's start or jumps over it (a
-- repeated local hour is two periods; a day whose midnight is skipped
-- starts at the jump); every boundary is a whole second. Units: 1 MINUTE,
-- 2 HOUR, 3 DAY, 4 WEEK (ISO, Monday), 5 MONTH, 6 YEAR.
local floor = math.floor
local MONTH_STARTS = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334}
local function is_leap(y) return y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0) end
local function leap_days_before(year)
  local y = year - 1
  return floor(y / 4) - floor(y / 100) + floor(y / 400)
end
local function year_start(year) return 365 * (year - 1970) + leap_days_before(year) - leap_days_before(1970) end
local function first_of(year, month)
  return year_start(year) + MONTH_STARTS[month] + ((month > 2 and is_leap(year)) and 1 or 0)
end
local function year_month(days)
  local year = 1970 + floor(days * 400 / 146097)
  while year_start(year) > days do year = year - 1 end
  while year_start(year + 1) <= days do year = year + 1 end
  local doy = days - year_start(year)
  local month = 12
  while month > 1 and first_of(year, month) - year_start(year) > doy do month = month - 1 end
  return year, month
end
-- The latest unit start at or before the local time `l`, and the earliest after it.
local function unit_floor(u, l)
  if u == 1 then return l - l % 60 end
  if u == 2 then return l - l % 3600 end
  local days = floor(l / 86400)
  if u == 3 then return days * 86400 end
  if u == 4 then return (days - (days + 3) % 7) * 86400 end
  local year, month = year_month(days)
  if u == 5 then return first_of(year, month) * 86400 end
  return first_of(year, 1) * 86400
end
local function unit_next(u, l)
  local f = unit_floor(u, l)
  if u == 1 then return f + 60 end
  if u == 2 then return f + 3600 end
  if u == 3 then return f + 86400 end
  if u == 4 then return f + 7 * 86400 end
  local year, month = year_month(floor(f / 86400))
  if u == 5 then
    if month == 12 then return first_of(year + 1, 1) * 86400 end
    return first_of(year, month + 1) * 86400
  end
  return first_of(year + 1, 1) * 86400
end
-- The zone's rules: the offset at t, the latest change at or before t and
-- the earliest after it (nil: none in the range the head covers).
local function change_index(z, t) -- the number of changes at or before t
  local lo, hi = 0, #z.ts
  while lo < hi do
    local mid = floor((lo + hi + 1) / 2)
    if z.ts[mid] <= t then lo = mid else hi = mid - 1 end
  end
  return lo
end
local function offset(z, t) if z.fixed then return z.fixed end return z.offs[change_index(z, t) + 1] end
local function change_at_or_before(z, t) if z.fixed then return nil end return z.ts[change_index(z, t)] end
local function change_after(z, t) if z.fixed then return nil end return z.ts[change_index(z, t) + 1] end
local function uncovered(z)
  throw("ERR ratelimit: the calendar of time zone '" .. zone_printable(z.name) ..
    "' is not covered by the offsets the client passed (the client's clock is far from the server's)")
end
-- The latest boundary at or before t, walking back one segment of constant
-- offset at a time (calendar.rs's `start`).
local function period_start(t, u, z)
  local x, off = t, offset(z, t)
  for _ = 1, 64 do
    local shown = unit_floor(u, x + off)
    local c = change_at_or_before(z, x)
    if c == nil or not (shown - off < c) then
      if c == nil and not z.fixed and shown - off < z.lo then uncovered(z) end
      return shown - off
    end
    local before = offset(z, c - 1)
    if shown >= c + before then return c end
    x, off = c - 1, before
  end
  return x
end
-- The earliest boundary after t (calendar.rs's `end`).
local function period_end(t, u, z)
  local x, off = t, offset(z, t)
  for _ = 1, 64 do
    local nxt = unit_next(u, x + off)
    local c = change_after(z, x)
    if c == nil or not (nxt - off >= c) then
      if c == nil and not z.fixed and nxt - off > z.hi then uncovered(z) end
      return nxt - off
    end
    local after = offset(z, c)
    if nxt <= c + after or unit_floor(u, c + after) == c + after then return c end
    x, off = c, after
  end
  return x
end
