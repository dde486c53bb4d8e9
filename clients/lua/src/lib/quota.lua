-- RL.QUOTA: calendar periods (lib/calendar.lua) -----------------------------
-- state: {used, start, fin, till (Unix s), last (µs), unit, zone}

local quota = {}
function quota.parse(s)
  local u, a, b, c, l, n, z = string.match(s, '^Q|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d)|(.+)$')
  if u == nil then throw(WRONGTYPE.err) end
  -- A debt past 2^53 (RL.CHARGE) is kept exact as a big integer too.
  return {used = tonumber(u), used_big = #u > 15 and bparse(u) or nil, start = tonumber(a), fin = tonumber(b), till = tonumber(c),
    last = tonumber(l), unit = tonumber(n), zone = z}
end
function quota.encode(st)
  local used = st.used_big and bstr(st.used_big) or numstr(st.used)
  return 'Q|' .. used .. '|' .. numstr(st.start) .. '|' .. numstr(st.fin) .. '|' ..
    numstr(st.till) .. '|' .. numstr(st.last) .. '|' .. st.unit .. '|' .. st.zone
end
-- (start, end) in Unix seconds of the period holding t (µs); with
-- `below_ok`, an instant before the range the head covers gets (nil, the
-- range's start): only a key's last unit long ago asks, whose period ended
-- before now, so that its true end and this one decide alike.
local function period(t_us, P, below_ok)
  local t = divmod(t_us, 1000000)
  local z = P.zone
  if below_ok and not z.fixed and t < z.lo then return nil, z.lo end
  if not z.fixed and (t < z.lo or t > z.hi) then uncovered(z) end
  return period_start(t, P.unit_index, z), period_end(t, P.unit_index, z)
end
local function counted_until(st, P)
  if st == nil or st.used == 0 then return nil end
  local deadline = st.till
  if not (st.unit == P.unit_index and st.zone == P.zone.name) then
    local _, fin = period(st.last, P, true)
    if fin > deadline then deadline = fin end
  end
  if NOW < deadline * 1000000 then return deadline end
  return nil
end
function quota.decide(st, P, q)
  -- Both boundaries must cover now, whatever the key holds.
  period(NOW, P, false)
  local deadline = counted_until(st, P)
  local used = deadline and st.used or 0
  local fits = q <= P.limit
  local allowed = fits and used + q <= P.limit
  local update = nil
  if allowed and q > 0 then
    if deadline == nil then
      local s, e = period(NOW, P, false)
      update = {used = q, start = s, fin = e, till = e, last = NOW, unit = P.unit_index, zone = P.zone.name}
    else
      local last = math.max(st.last, NOW)
      if P.unit_index == st.unit and P.zone.name == st.zone and last < st.fin * 1000000 then
        update = {used = st.used + q, start = st.start, fin = st.fin, till = st.till, last = last, unit = st.unit, zone = st.zone}
      else
        local s, e = period(last, P, false)
        update = {used = st.used + q, start = s, fin = e, till = math.max(deadline, e), last = last, unit = P.unit_index, zone = P.zone.name}
      end
    end
  end
  local after = allowed and used + q or used
  local reset
  if update then reset = off_us(update.till * 1000000)
  elseif deadline then reset = off_us(deadline * 1000000)
  else reset = BZERO end
  local retry = nil
  if not fits then retry = 'never' elseif not allowed then retry = deadline and off_us(deadline * 1000000) or BZERO end
  return {limited = not allowed, limit = P.limit, remaining = math.max(P.limit - after, 0), retry = retry, reset = reset}, update
end
function quota.apply(st, u) return u end
local function set_used(st, b) -- st.used from a big integer
  st.used = bnum(b)
  st.used_big = bcmp(b, big(1000000000000000)) > 0 and b or nil
end
function quota.refund(st, P, q)
  if counted_until(st, P) then
    if st.used_big then set_used(st, bsub(st.used_big, big(q)))
    else st.used = st.used - math.min(q, st.used) end
  end
  return st
end
-- RL.CHARGE: `q` units recorded at now as an allowed request would,
-- whatever the limit; refused, nothing recorded, when the period's used
-- units would pass 10^18.
function quota.charge(st, P, q)
  period(NOW, P, false)
  local deadline = counted_until(st, P)
  local used = deadline and (st.used_big or big(st.used)) or BZERO
  local total = badd(used, big(q))
  if bcmp(total, bparse('1000000000000000000')) > 0 then
    throw("ERR quantity would take the period's used units past 1000000000000000000")
  end
  local open = {}
  for k, v in pairs(P) do open[k] = v end
  open.limit = math.huge
  local _, u = quota.decide(st, open, q)
  set_used(u, total)
  return u
end
local UNIT_NAMES = {'minute', 'hour', 'day', 'week', 'month', 'year'}
function quota.inspect(st)
  local used = st.used
  if used == 0 or NOW >= st.till * 1000000 then used = 0 end
  return {'unit', UNIT_NAMES[st.unit], 'zone', st.zone, 'used', used, 'start', st.start * 1000, 'end', st.till * 1000}
end
function quota.store(key, st) redis.call('SET', key, quota.encode(st), 'KEEPTTL') end
throttle.name, slide.name, slice.name, lease.name, quota.name = 'THROTTLE', 'SLIDE', 'SLICE', 'LEASE', 'QUOTA'
