-- RL.SLIDE: the log, instants in µs ---------------------------------------
-- state: {entries = {{t, n}, ...} oldest first, clock, first, joined}; the
-- header stored also holds the units of all entries, their number and
-- the oldest one's offset, which the fast path (fast()) reads instead
-- of the entries.

local slide = {}
function slide.parse(all)
  local base, clock, first, joined = string.match(all[1], '^S|(%d+)|(%d+)|(%d+)|([01])|%d+|%d+|%d+$')
  if base == nil then throw(WRONGTYPE.err) end
  base = tonumber(base)
  local st = {entries = {}, base = base, clock = tonumber(clock), first = tonumber(first), joined = joined == '1', raw = {}}
  for i = 2, #all do
    local off, n = string.match(all[i], '^(%d+):?(%d*)$')
    if off == nil then throw(WRONGTYPE.err) end
    st.entries[i - 1] = {base + tonumber(off), n == '' and 1 or tonumber(n)}
    st.raw[i - 1] = all[i]
  end
  return st
end
local function units_before(st, index) -- units in the first `index` entries
  local u = 0
  for i = 1, index do u = u + st.entries[i][2] end
  return u
end
local function expired_at(st, at, W)
  local cutoff = at - W
  if cutoff < 0 then return 0 end
  if st.clock <= cutoff then return #st.entries end
  local n = 0
  while n < #st.entries and st.entries[n + 1][1] <= cutoff do n = n + 1 end
  return n
end
local function entry_of_unit(st, rank) -- 1-based index of the entry holding unit `rank` (0-based)
  local u = 0
  for i = 1, #st.entries do
    u = u + st.entries[i][2]
    if u > rank then return i end
  end
  return nil
end
local function empty_slide() return {entries = {}, clock = 0, first = 0, joined = false, raw = {}} end
function slide.decide(st, P, q)
  st = st or empty_slide()
  local E = st.entries
  local newest = E[#E]
  local at = NOW
  if newest and st.clock > NOW then at = st.clock end
  local expired = expired_at(st, at, P.window)
  local total_units = units_before(st, #E)
  local used = total_units - units_before(st, expired)
  local reset
  if newest and used > 0 then reset = off_us(newest[1] + P.window) else reset = BZERO end
  local limit = P.limit
  if q > limit then
    return {limited = true, limit = limit, remaining = limit - used, retry = 'never', reset = reset}
  end
  local total = used + q
  if total <= limit then
    local d = {limited = false, limit = limit, remaining = limit - total, reset = reset}
    if q == 0 then return d end
    d.reset = off_us(at + P.window)
    return d, {expired = expired, at = at, q = q}
  end
  local need = total - limit
  local rank = units_before(st, expired) + need - 1
  local i = entry_of_unit(st, rank) or #E
  return {limited = true, limit = limit, remaining = limit - used, retry = off_us(E[i][1] + P.window), reset = reset}
end
local function has_counted(st)
  for _, e in ipairs(st.entries) do if e[2] > 1 then return true end end
  return false
end
local function drop_front(st, n)
  if n == 0 then return end
  local E = {}
  for i = n + 1, #st.entries do E[#E + 1] = st.entries[i] end
  st.entries = E
  st.dropped = (st.dropped or 0) + n
  if not has_counted(st) then st.joined = false end
end
local function first_of_newest(st)
  local newest = st.entries[#st.entries]
  if newest == nil then return nil end
  if newest[2] > 1 then return math.min(st.first, newest[1]) end
  return newest[1]
end
local function push_entry(st, t, count)
  st.entries[#st.entries + 1] = {t, count}
  if count > 1 then st.first = t end
end
local function push_counted(st, t, count)
  if not has_counted(st) then st.joined = false end
  push_entry(st, t, count)
end
local function record(st, t, q)
  local E = st.entries
  local newest = E[#E]
  if q == 1 and (newest == nil or newest[1] ~= t) then push_entry(st, t, 1); return end
  if newest and newest[1] == t then
    if newest[2] > 1 then newest[2] = newest[2] + q; return end
    local twin = #E >= 2 and E[#E - 1][1] == t and E[#E - 1][2] == 1
    local singles = twin and 2 or 1
    if singles + q >= 3 then
      for _ = 1, singles do E[#E] = nil end
      push_counted(st, t, singles + q)
      return
    end
  elseif q >= 3 then
    push_counted(st, t, q)
    return
  end
  for _ = 1, q do push_entry(st, t, 1) end
end
local function record_within(st, t, q, d)
  local first = first_of_newest(st)
  if first ~= nil and math.max(t - first, 0) < d then
    local E = st.entries
    local newest = E[#E]
    if newest[2] == 1 and not has_counted(st) then st.joined = false end
    newest[1] = t
    newest[2] = newest[2] + q
    st.first = first
    st.joined = true
  else
    if q > 1 then push_counted(st, t, q) else push_entry(st, t, q) end
  end
end
function slide.apply(st, u, P)
  st = st or empty_slide()
  drop_front(st, math.min(u.expired, #st.entries))
  local at = u.at
  if #st.entries > 0 and st.clock > at then at = st.clock end
  local q = math.min(u.q, P.limit)
  if P.precision == 0 then record(st, at, q) else record_within(st, at, q, P.precision) end
  st.clock = at
  return st
end
-- The newest entry takes `q` more units and moves to `t`; its first unit
-- stays (RL.CHARGE past the log's bound of entries).
local function join(st, t, q)
  local newest = st.entries[#st.entries]
  local first = first_of_newest(st)
  newest[1] = t
  newest[2] = newest[2] + q
  st.first = first
  st.joined = true
end
-- RL.CHARGE: drops the units that have left, then records `q` units at the
-- clock as an allowed request would (record, record_within), unless that
-- takes the log past its bound of entries (limit; with PRECISION d, also
-- window / d + 1): then they join the newest entry. Refused, nothing
-- recorded, past 2^32 - 1 units held.
function slide.charge(st, P, q)
  st = st or empty_slide()
  local at = NOW
  if #st.entries > 0 and st.clock > at then at = st.clock end
  local expired = expired_at(st, at, P.window)
  local held = units_before(st, #st.entries) - units_before(st, expired)
  if held + q > 4294967295 then throw('ERR quantity would take the units a SLIDE key holds past 4294967295') end
  drop_front(st, expired)
  local d = P.precision
  local bound = P.limit
  if d > 0 then bound = math.min(bound, (P.window - P.window % d) / d + 1) end
  local E = st.entries
  if #E + (d > 0 and 1 or 2) <= bound then
    if d == 0 then record(st, at, q) else record_within(st, at, q, d) end
  elseif #E == 0 then
    if q > 1 then push_counted(st, at, q) else push_entry(st, at, q) end
  else
    join(st, at, q)
  end
  st.clock = at
  return st
end
local function keep_units(st, keep)
  local total = units_before(st, #st.entries)
  if keep >= total then return end
  if keep == 0 then st.entries = {}; st.joined = false; return end
  local last = entry_of_unit(st, keep - 1)
  local in_last = keep - units_before(st, last - 1)
  local newest_kept = last == #st.entries
  for i = #st.entries, last + 1, -1 do st.entries[i] = nil end
  st.entries[last][2] = in_last
  if not has_counted(st) then st.joined = false end
  if not newest_kept then
    local E = st.entries
    local newest = E[#E]
    if newest[2] > 1 then
      if st.joined then st.first = (E[#E - 1] and E[#E - 1][1]) or 0 else st.first = newest[1] end
    end
  end
end
function slide.refund(st, P, q)
  local at = NOW
  if #st.entries > 0 and st.clock > at then at = st.clock end
  drop_front(st, expired_at(st, at, P.window))
  keep_units(st, math.max(units_before(st, #st.entries) - q, 0))
  st.clock = at
  return st
end
function slide.inspect(st)
  local E = st.entries
  local out = {'units', units_before(st, #E), 'entries', #E}
  if #E > 0 then
    local function age(t) return bnum(bdiv_ceil(big(math.max(NOW - t, 0)), 1000)) end
    out[#out + 1] = 'oldest_age_ms'; out[#out + 1] = age(E[1][1])
    out[#out + 1] = 'newest_age_ms'; out[#out + 1] = age(E[#E][1])
  end
  return out
end
-- Writes the log: the header, the entries dropped at the front, and the
-- entries that differ from the ones stored at the back.
function slide.store(key, st)
  local E = st.entries
  if st.base == nil or (E[1] and E[1][1] < st.base) then st.base = E[1] and E[1][1] or 0; st.raw = nil end
  local enc = {}
  for i, e in ipairs(E) do
    local off = numstr(e[1] - st.base)
    enc[i] = e[2] > 1 and (off .. ':' .. numstr(e[2])) or off
  end
  local header = 'S|' .. numstr(st.base) .. '|' .. numstr(st.clock) .. '|' .. numstr(st.first) .. '|' .. (st.joined and '1' or '0')
    .. '|' .. numstr(units_before(st, #E)) .. '|' .. #E .. '|' .. numstr(E[1] and E[1][1] - st.base or 0)
  local dropped = st.dropped or 0
  local old = {}
  if st.raw == nil then
    redis.call('DEL', key)
    redis.call('RPUSH', key, header)
  elseif dropped > 0 then
    for i = dropped + 1, #st.raw do old[#old + 1] = st.raw[i] end
    redis.call('LTRIM', key, dropped + 1, -1)
    redis.call('LPUSH', key, header)
  else
    old = st.raw
    redis.call('LSET', key, 0, header)
  end
  local p = 0
  while p < #old and p < #enc and old[p + 1] == enc[p + 1] do p = p + 1 end
  if p < #old then redis.call('LTRIM', key, 0, p) end
  local rest = {}
  for i = p + 1, #enc do rest[#rest + 1] = enc[i] end
  call_chunked('RPUSH', key, rest, 1000)
end

