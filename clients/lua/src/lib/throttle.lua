-- RL.THROTTLE: GCRA, in units of 1/count ns (exact big integers) --------

local throttle = {}
-- state: {whole = big ns, frac, den}, or nil. Stored as G|whole, or
-- G|whole|frac|den when frac is not 0 (den: the count it is a part of);
-- the tag g| in place of G| when the key's expiry is later than the
-- TAT's own (throttle.store).
function throttle.parse(s)
  local w, rest = string.match(s, '^[Gg]|(%d+)(.*)$')
  local f, d = '0', '1'
  if rest ~= '' then f, d = string.match(rest or '', '^|(%d+)|(%d+)$') end
  if w == nil or f == nil then throw(WRONGTYPE.err) end
  return {whole = bparse(w), frac = tonumber(f), den = tonumber(d)}
end
local function tat_scaled(st, P)
  if st == nil then return BZERO end
  local c = P.count
  local frac
  if st.den == c or st.frac == 0 then frac = big(st.frac)
  else frac = bdiv_ceil(bmul(big(st.frac), big(c)), st.den) end
  return badd(bmul(st.whole, big(c)), frac)
end
local function from_scaled(s, P)
  local whole, frac = bdiv(s, P.count)
  return {whole = whole, frac = frac, den = P.count}
end
local function intervals(x, P) -- whole emission intervals in a scaled duration
  return bdiv(bdiv(x, P.p), P.unit)
end
function throttle.decide(st, P, q)
  if st == nil or st.den == P.count or st.frac == 0 then
    local sec = (NOW - NOW % 1000000) / 1000000
    local wh, wl
    if st then
      local ws = bstr(st.whole)
      local n = #ws
      if n <= 24 then wh, wl = n > 9 and tonumber(string.sub(ws, 1, n - 9)) or 0, tonumber(string.sub(ws, -9)) end
    end
    if st == nil or wh then
      local k, limited, remaining, retry, reset, _, hi, lo, frac = gcra(sec, NOW - sec * 1000000, wh, wl,
        st and st.frac, P.cap, P.count, P.p * P.unit, q)
      if limited ~= nil then
        if k > 1 then
          reset = bmul(big(reset), big(k))
          if type(retry) == 'number' then retry = bmul(big(retry), big(k)) end
        end
        local d = {limited = limited, limit = P.cap, remaining = remaining, retry = retry, reset = reset}
        if hi then return d, {whole = string.format('%d%09d', hi, lo), frac = frac} end
        return d
      end
    end
  end
  local now_s = bmul(NOW_NS, big(P.count))
  local tat_s = tat_scaled(st, P)
  local ttl_before = bsub(tat_s, now_s)
  local fits = q <= P.cap
  local new_tat = badd(bmax(tat_s, now_s), bmul(big(math.min(q, P.cap)), P.period))
  local ttl_after = bsub(new_tat, now_s)
  local limited = (not fits) or bcmp(ttl_after, P.tolerance) > 0
  local ttl = limited and ttl_before or ttl_after
  local remaining = bnum(bmin(intervals(bsub(P.tolerance, ttl), P), big(P.cap)))
  local retry = nil
  if not fits then retry = 'never'
  elseif limited then retry = bdiv_ceil(bsub(ttl_after, P.tolerance), P.count) end
  local d = {limited = limited, limit = P.cap, remaining = remaining, retry = retry,
    reset = bdiv_ceil(ttl, P.count)}
  local update = nil
  if not limited and q > 0 then update = ttl_after end
  return d, update
end
-- MAXWAIT: the request's turn, a ns offset from now (BZERO: at once),
-- from which its new TAT is at most the tolerance ahead; nil when it can
-- never fit (src/core/throttle.rs, `turn`).
function throttle.turn(st, P, q)
  if q > P.cap then return nil end
  local now_s = bmul(NOW_NS, big(P.count))
  local ahead = bsub(badd(bmax(tat_scaled(st, P), now_s), bmul(big(q), P.period)), now_s)
  local late = bsub(ahead, P.tolerance)
  if biszero(late) then return BZERO end
  return bdiv_ceil(late, P.count)
end
-- The request booked for a turn at `at` (a ns offset from now, at or
-- after its own turn): recorded now as a request allowed at the instant it
-- goes, TAT + q x T from its own turn, max(at, TAT) + q x T from a later
-- one (another limit's). Allowed, its `turn` its own; remaining and reset
-- after the booking (`book`).
function throttle.book(st, P, at, q)
  local own = throttle.turn(st, P, q)
  if own == nil then return throttle.decide(st, P, q) end
  if q == 0 then
    local d = throttle.decide(st, P, 0)
    d.limited, d.retry, d.turn = false, nil, own
    return d
  end
  local now_s = bmul(NOW_NS, big(P.count))
  local tat_s = tat_scaled(st, P)
  local start
  if bcmp(at, own) <= 0 then start = bmax(tat_s, now_s)
  else start = bmax(tat_s, badd(now_s, bmul(at, big(P.count)))) end
  local ahead = bsub(badd(start, bmul(big(q), P.period)), now_s)
  local remaining = bnum(bmin(intervals(bsub(P.tolerance, ahead), P), big(P.cap)))
  return {limited = false, limit = P.cap, remaining = remaining, turn = own, reset = bdiv_ceil(ahead, P.count)}, ahead
end
function throttle.apply(st, update, P)
  if update.whole then return {whole = bparse(update.whole), frac = update.frac, den = P.count} end
  return from_scaled(badd(bmul(NOW_NS, big(P.count)), update), P)
end
function throttle.refund(st, P, q)
  local now_s = bmul(NOW_NS, big(P.count))
  local tat_s = tat_scaled(st, P)
  if bcmp(tat_s, now_s) <= 0 then return st end
  local back = bmul(big(math.min(q, P.cap)), P.period)
  return from_scaled(bmax(bsub(tat_s, back), now_s), P)
end
-- RL.CHARGE: the TAT moves to max(now, TAT) + q x T, past the tolerance
-- if need be (a debt time pays back); refused, nothing recorded, when that
-- puts it more than the maximum time (10 years) ahead of now, or past the
-- last instant a TAT holds (2^64 - 1 ns).
local U64_MAX = bparse('18446744073709551615')
function throttle.charge(st, P, q)
  local now_s = bmul(NOW_NS, big(P.count))
  local ahead = badd(bsub(tat_scaled(st, P), now_s), bmul(big(q), P.period))
  if bcmp(ahead, bmul(bmul(big(MAX_SECONDS), big(S_NS)), big(P.count))) > 0
    or bcmp(badd(now_s, ahead), bmul(U64_MAX, big(P.count))) > 0 then
    throw('ERR quantity would put the TAT more than 315360000 seconds (10 years) ahead of now')
  end
  return from_scaled(badd(now_s, ahead), P)
end
function throttle.encode(st)
  if st.frac == 0 then return 'G|' .. bstr(st.whole) end
  return 'G|' .. bstr(st.whole) .. '|' .. numstr(st.frac) .. '|' .. numstr(st.den)
end
local function tat_ceil(st) -- whole ns, rounded up
  if st.frac > 0 then return badd(st.whole, {1}) end
  return st.whole
end
function throttle.inspect(st)
  local tat = tat_ceil(st)
  return {'tat_ahead_ms', bnum(bdiv_ceil(bsub(tat, NOW_NS), 1000000)),
    'tat_unix_ms', bnum(bdiv_ceil(tat, 1000000))}
end
-- `before`: the key's expiry before the call (Unix ms; -1 none, -2 no
-- key), which the call moves to the TAT's ms when later. Where it stays
-- later (a refund), the tag g| sends the next calls to this code, which
-- keeps it; fast() moves a G| key's expiry to the new TAT's ms.
function throttle.store(key, st, before)
  local v = throttle.encode(st)
  if before > bnum(bdiv_ceil(tat_ceil(st), 1000000)) then v = 'g' .. string.sub(v, 2) end
  redis.call('SET', key, v, 'KEEPTTL')
end

