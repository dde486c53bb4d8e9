-- The decision of one kind's usual call. key; a, b, c the kind's
-- parameters as sent (THROTTLE: max_burst count period; SLIDE: limit
-- window precision ('0' when none); SLICE: limit window slices; LEASE:
-- limit ttl lease_id; QUOTA: limit unit calendar); qs the quantity as
-- sent; us_per µs per unit of the reply (1000: MS); t the server's TIME;
-- commit: whether to make the call's writes (one decision). It returns
-- the five values of the reply (nil when the call needs the full code,
-- before any write); with commit, after its writes and alone (handing
-- them back through a helper of varargs cost a call about 900
-- instructions); without, it only reads, and returns the reset as an
-- offset from now (whole µs, then the ns beyond them), then the call's
-- writes, when it has any: a function of its arguments only, followed by
-- those arguments. An allowed
-- call's function is its kind's write (`put`; `set_state` for RL.QUOTA),
-- with no upvalues: made at little cost, where a closure over the
-- decision's locals costs several thousand instructions; or redis.call
-- itself (RL.THROTTLE's SET, a limited call's PEXPIREAT ... GT moving the
-- key's expiry out). gcra and ceil_div are the functions above, given as
-- arguments: an upvalue would cost each call about 400 instructions. w:
-- RL.THROTTLE's MAXWAIT in ns (nil without; gcra() books the turn).
local function fast(kind, key, a, b, c, qs, us_per, t, gcra, ceil_div, commit, w)
  if kind == 'THROTTLE' then
    -- A G| key's expiry is its TAT's (Unix ms, rounded up): every write
    -- leaves it so, but where a refund keeps a later one (the full code
    -- then writes the state as g|..., which this path leaves to it). A
    -- new TAT is never earlier, so the module's rule (the expiry only
    -- moves later; a key without one gets one) is SET ... PXAT the new
    -- TAT's ms, and a limited call changes nothing.
    local bs, cs, ps = a, b, c
    if not (#bs > 0 and #bs <= 13 and #cs > 0 and #cs <= 10 and #ps > 0 and #ps <= 12 and #qs > 0 and #qs <= 13
      and string.find(bs .. cs .. ps .. qs, '^%d+$')) then return nil end
    local b, c, p, q = bs + 0, cs + 0, ps + 0, qs + 0
    local unit = us_per * 1000
    local T = p * unit
    if not (b <= 1000000000000 and c >= 1 and c <= 4294967295 and p >= 1 and T <= 315360000000000000
      and q <= 1000000000000) then
      return nil
    end
    local sec, usec = t[1] + 0, t[2] + 0
    local raw = redis.pcall('GET', key)
    local wh, wl, f, den
    if raw then
      -- The TAT in ns as s x 10^9 + ns, when it has 19 digits (the
      -- years 2001 to 2286; any other goes to the full code), then
      -- nothing (no fraction) or |frac|den with den the count as sent.
      local rest
      if type(raw) == 'string' then
        wh, wl, rest = string.match(raw, '^G|(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)(.*)$')
      end
      if rest == '' then f = 0
      elseif rest then
        f, den = string.match(rest, '^|(%d+)|(%d+)$')
        if den ~= cs then return nil end
        f = f + 0
      else return nil end
      wh, wl = wh + 0, wl + 0
    end
    local cap = b + 1
    local k, limited, remaining, retry, reset, ms, hi, lo, frac = gcra(sec, usec, wh, wl, f, cap, c, T, q, w)
    if limited == nil then return nil end
    if retry == nil or retry == 'never' then retry = -1 else retry = ceil_div(retry, unit / k) end
    local five = {limited and 1 or 0, cap, remaining, retry, ceil_div(reset, unit / k)}
    local rus, rns = reset, 0 -- reset: whole µs, ns beyond
    if k == 1 then rns = reset % 1000; rus = (reset - rns) / 1000 end
    if hi then
      -- One string.format field where the TAT is whole µs; the
      -- fraction and the count (as stored, den, when it was) only when
      -- the fraction is not 0. Made here, also for a caller that will
      -- not write (RL.PEEK, a refused RL.ALLOW): formatting at write
      -- time would cost every call a closure.
      local v
      if lo % 1000 == 0 then v = string.format('G|%d000', hi * 1000000 + lo / 1000)
      else v = string.format('G|%d%09d', hi, lo) end
      if frac ~= 0 then v = v .. '|' .. string.format('%d', frac) .. '|' .. (den or string.format('%d', c)) end
      local at = string.format('%d', ms)
      if commit then redis.call('SET', key, v, 'PXAT', at) return five end
      return five, rus, rns, redis.call, 'SET', key, v, 'PXAT', at
    end
    return five, rus, rns
