-- redis-ratelimit's Lua backend: one script for every command (built by
-- clients/lua/build.py from clients/lua/src/; README.md has the contract).
-- The manifest's prefix of a command comes first and names the path this
-- code takes, in two locals (below).
-- KEYS: the command's keys. ARGV: the head (the clock, '' for the server's
-- TIME, and the zones' UTC offsets), then the module command's other
-- arguments, exactly as the module gets them: RL.THROTTLE k 10 20 30 is
-- KEYS {k}, ARGV {head, 10, 20, 30}; RL.ALLOW 2 a b spec... is KEYS {a, b},
-- ARGV {head, 2, spec...}.
-- Numbers are Lua doubles: integers are exact below 2^53; anything larger
-- (nanosecond instants, GCRA's scaled arithmetic) goes through the small
-- decimal big-integer helpers of lib().

-- The prefix sets `entry` and `arg`: `limiter` with the kind's name
-- (RL.THROTTLE ... RL.QUOTA), `several` with whether to write (RL.ALLOW,
-- RL.PEEK), or `inspect`, `refund`, `release` (the test variant also
-- takes `lib`: clients/conformance/exact_throttle.lua). Everything is made
-- in the block below, and only on the path a call takes: a script keeps
-- nothing between calls, so each function it defines is made again on
-- every call (a closure, each upvalue and a function wrapping this block
-- all cost: bench/results/design.md, "The Lua backend's costs"). The full code, lib(), is made only when a fast path gives
-- the call up, or for the commands without one. Decisions written twice
-- for speed: RL.THROTTLE's µs call (throttle_us.lua and fast/gcra.lua,
-- measured in bench/results/2026-12-01-lua.md) and each kind's usual call
-- (fast/ and lib/; fast() exists so that a usual call never makes lib()'s
-- hundreds of functions).
-- RL.TOP needs the module: a script keeps nothing between calls and may
-- touch only its declared keys, so it has no summary of refusals to show.
if entry == 'top' then
  return {err = 'ERR RL.TOP needs the module: the Lua backend keeps no summary of refusals'}
end
do
  -- Exact arithmetic in doubles, used wherever every value is an integer
  -- below 2^52 (a double holds it, and a % b is exact); the big integers of
  -- lib() take over when one is not. Lua function calls into C (string.*,
  -- math.*, tonumber) cost about as much as a dozen arithmetic steps, so
  -- the fast paths avoid them: strings of digits become numbers by
  -- arithmetic coercion (s + 0). Numbers become strings through
  -- string.format's %d (a 64-bit integer: every value so written is an
  -- integer below 2^53), with as few fields as can be: %.0f, tostring and
  -- .. print through the C library's floating-point code, several times
  -- dearer. So is a number given to redis.call, which the server prints
  -- with %.17g (dearer than a string: bench/results/design.md): the fast paths
  -- give it strings.

  -- RL.THROTTLE's usual call in whole µs, in one block, before anything
  -- else is made: max_burst count period [quantity] (no MS), a period of
  -- at most 2^50 ns (13 days) that count divides in whole µs, a tolerance
  -- of at most 100 years, a state of the usual form (G| and a TAT of 19
  -- digits in whole µs) or none, and a TAT at most 4,000,000 s ahead. It
  -- is gcra()'s µs case (fast/gcra.lua: written twice, a change there is
  -- made here too) with every value below 2^52, and the fast path's
  -- writes (see fast()); it makes no function and calls none of the
  -- prelude's, so it costs less than going through fast() and gcra()
  -- (measured: bench/results/2026-12-01-lua.md). Any other call goes on below, before any write
  -- (having read the clock and the key, which the rest reads again).
  -- ARGV: the head, then max_burst count period [quantity].
  if entry == 'limiter' and arg == 'THROTTLE' then
    local A = ARGV
    local bs, cs, ps, qs = A[2], A[3], A[4], A[5] or '1'
    if ps and not A[6] and #bs > 0 and #bs <= 13 and #cs > 0 and #cs <= 10 and #ps > 0 and #ps <= 12 and #qs > 0
      and #qs <= 13 and string.find(bs .. cs .. ps .. qs, '^%d+$') then
      local b, c, p, q = bs + 0, cs + 0, ps + 0, qs + 0
      local T = p * 1000000000
      local cap = b + 1
      local e = T / c / 1000 -- µs per unit
      local tol = cap * e
      if b <= 1000000000000 and c >= 1 and c <= 4294967295 and p >= 1 and T <= 1125899906842624
        and q <= 1000000000000 and T % (c * 1000) == 0 and tol <= 3153600000000000 then
        local key = KEYS[1]
        -- Now: the server's TIME, or the clock the head passes (10 + 6 digits
        -- and no zone, else the full code reads it).
        local sec, usec
        local h = A[1]
        if h == '' then
          local t = redis.pcall('TIME')
          if t.err then return {err = 'ERR ratelimit: TIME refused in scripts: ' .. t.err} end
          sec, usec = t[1] + 0, t[2] + 0
        else
          local hs, hu = string.match(h, '^(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d)$')
          if hs then sec, usec = hs + 0, hu + 0 end
        end
        local raw = sec and redis.pcall('GET', key)
        local ttl_b, ok = 0, sec ~= nil -- µs from now to the TAT, at least 0
        if raw then
          local wh, wu
          if type(raw) == 'string' then wh, wu = string.match(raw, '^G|(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d)000$') end
          if wh then
            local dh = wh - sec
            if dh > 4000000 then ok = false
            elseif dh >= -4000000 then
              local d = dh * 1000000 + (wu - usec)
              if d > 0 then ttl_b = d end
            end
          else ok = false end
        end
        if ok then
          local ttl_a = ttl_b + (q < cap and q or cap) * e
          local limited = q > cap or ttl_a > tol
          local ttl = limited and ttl_b or ttl_a
          local remaining = 0
          if tol > ttl then
            local x = tol - ttl
            remaining = (x - x % e) / e
            if remaining > cap then remaining = cap end
          end
          local retry = -1
          if q <= cap and limited then
            local r = (ttl_a - tol) % 1000000
            retry = (ttl_a - tol - r) / 1000000 + (r > 0 and 1 or 0)
          end
          local r = ttl % 1000000
          local five = {limited and 1 or 0, cap, remaining, retry, (ttl - r) / 1000000 + (r > 0 and 1 or 0)}
          if not limited and q > 0 then
            local x = usec + ttl_a -- the new TAT, µs after the second `sec`
            local m = x % 1000
            redis.call('SET', key, string.format('G|%d000', sec * 1000000 + x), 'PXAT',
              string.format('%d', sec * 1000 + (x - m) / 1000 + (m > 0 and 1 or 0)))
          end
          return five
        end
      end
    end
  end

  -- Written twice: RL.THROTTLE's usual call in whole µs is also decided by
  -- throttle_us.lua, which runs first and saves a call of fast() and gcra()
  -- (measured: bench/results/2026-12-01-lua.md); a change here is made there too.
  -- RL.THROTTLE's decision (the module's GCRA in units of 1/count ns) in
  -- doubles, in the largest unit that holds the case exactly: µs or ns when
  -- the period per count is whole in it and so is the stored TAT (no
  -- fraction), which is the module's arithmetic scaled down (every value a
  -- multiple of the larger unit) and reaches periods 1,000 times longer;
  -- else 1/count ns. sec, usec: now (the server's TIME); wh, wl, f: the
  -- stored TAT (wh x 10^9 + wl ns + f / count; wh nil when none); cap =
  -- max_burst + 1; c = count; T = period in ns; q = quantity. Returns k,
  -- the unit's size in ns per count (1 or 1000), then nil when a value
  -- would reach 2^52, else limited, remaining, retry (nil: allowed, 'never',
  -- or units of k ns from now), reset (the same), the expiry (Unix ms,
  -- rounded up, of now + reset) and, when allowed with q > 0, the TAT to
  -- store: whole ns as hi x 10^9 + lo, and its fraction. w: MAXWAIT in ns
  -- (nil without): a request that can fit and whose turn (when its new TAT
  -- is at most the tolerance ahead) comes within w is booked, recorded now
  -- as allowed, its retry the wait for that turn (0: at once), as the
  -- module's `turn` and `book` for one limit.
  local function gcra(sec, usec, wh, wl, f, cap, c, T, q, w)
    local TWO52 = 4503599627370496
    local k = 1
    if wh == nil or f == 0 then
      -- Lua's % is a - floor(a / b) x b, exact below 2^50 but not past 2^53
      -- (T reaches 3.2 x 10^17): math.fmod (a call into C) beyond.
      local m1, m2
      if T <= 1125899906842624 then m1, m2 = T % (c * 1000), T % c
      else m1, m2 = math.fmod(T, c * 1000), math.fmod(T, c) end
      if m1 == 0 and (wh == nil or wl % 1000 == 0) then k, T, c = 1000, T / c / 1000, 1
      elseif m2 == 0 then T, c = T / c, 1 end
    end
    local tol = cap * T
    if tol >= TWO52 then return k end
    -- In µs, a tolerance past 100 years fits: the full code refuses it.
    if k > 1 and tol > 3153600000000000 then return k end
    local per_us, per_s = 1000 / k, 1000000000 / k -- units per µs, per s
    local ttl_b = 0 -- TAT - now in units, at least 0
    if wh then
      if f >= c then return k end
      local dh = wh - sec
      if dh > 4000000 then return k end
      if dh >= -4000000 then
        local d = dh * 1000000000 + (wl - usec * 1000) -- ns, a multiple of k
        -- d <= -1: d x c + f <= 0, as f < c
        if d >= 0 then
          ttl_b = d / k * c + f
          if ttl_b >= TWO52 then return k end
        end
      end
    end
    local m = q < cap and q or cap
    local ttl_a = ttl_b + m * T
    if ttl_a >= TWO52 then return k end
    local limited = q > cap or ttl_a > tol
    local turn = nil
    if w and q <= cap then
      turn = 0
      if ttl_a > tol then
        local x = ttl_a - tol
        local r = x % c
        turn = (x - r) / c + (r > 0 and 1 or 0)
        if turn <= w / k then limited = false else turn = nil end
      end
    end
    local ttl = limited and ttl_b or ttl_a
    local remaining = 0
    if tol > ttl then
      local x = tol - ttl
      remaining = (x - x % T) / T
      if remaining > cap then remaining = cap end
    end
    local retry = turn
    if q > cap then retry = 'never'
    elseif limited then
      retry = ttl_a - tol
      local r = retry % c
      retry = (retry - r) / c + (r > 0 and 1 or 0)
    end
    local r = ttl % c
    local reset = (ttl - r) / c + (r > 0 and 1 or 0)
    local y = usec * per_us + reset
    if y >= TWO52 then return k end
    local per_ms = per_us * 1000
    r = y % per_ms
    local ms = sec * 1000 + (y - r) / per_ms + (r > 0 and 1 or 0)
    if limited or q == 0 then return k, limited, remaining, retry, reset, ms end
    local frac = ttl_a % c
    local x = usec * per_us + (ttl_a - frac) / c
    if x >= TWO52 then return k end
    local lo = x % per_s
    return k, false, remaining, retry, reset, ms, sec + (x - lo) / per_s, lo * k, frac
  end

  -- ceil(a / b), a >= 0 and b >= 1 integers below 2^52.
  local function ceil_div(a, b)
    local r = a % b
    if r > 0 then return (a - r) / b + 1 end
    return (a - r) / b
  end

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
    elseif kind == 'QUOTA' then
      -- The write: the state, its expiry moved to ms (Unix ms) only when
      -- later (a key without one, -1, gets one); KEEPTTL while it stays,
      -- as SET's PXAT costs the server more than SET and PEXPIREAT
      -- together. raw: the state read (false: none).
      local function set_state(key, raw, v, ms)
        if raw then
          local before = redis.call('PEXPIRETIME', key)
          redis.call('SET', key, v, 'KEEPTTL')
          if before < ms then redis.call('PEXPIREAT', key, string.format('%d', ms)) end
        else
          redis.call('SET', key, v, 'PXAT', string.format('%d', ms))
        end
      end
      -- No TZ option: the zone is UTC, whose periods of a MINUTE, an HOUR, a
      -- DAY or a WEEK (from Monday; 1970-01-01 was a Thursday) are
      -- arithmetic. A MONTH or a YEAR takes the full code (lib/calendar.lua).
      local limit, uw = a, b
      local ui, len
      if uw == 'HOUR' or uw == 'hour' then ui, len = 2, 3600 elseif uw == 'DAY' or uw == 'day' then ui, len = 3, 86400
      elseif uw == 'MINUTE' or uw == 'minute' then ui, len = 1, 60 elseif uw == 'WEEK' or uw == 'week' then ui, len = 4, 604800 end
      if not (ui and #limit > 0 and #limit <= 16 and #qs > 0 and #qs <= 13 and string.find(limit .. qs, '^%d+$')) then
        return nil
      end
      local q = qs + 0
      limit = limit + 0
      local zone = 'UTC'
      if not (limit >= 1 and limit <= 1000000000000000 and q <= 1000000000000) then return nil end
      local sec = t[1] + 0
      local now = sec * 1000000 + t[2]
      -- The period holding now: [b1, b2).
      local b1 = sec + (ui == 4 and 259200 or 0)
      b1 = sec - b1 % len
      local b2 = b1 + len
      local raw = redis.pcall('GET', key)
      local used, start, fin, till, last, deadline = 0, b1, b2, b2, now, nil
      if raw then
        local u, a, e, c, l, ns, z
        if type(raw) == 'string' then
          u, a, e, c, l, ns, z = string.match(raw, '^Q|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d)|(.+)$')
        end
        if u == nil or ns + 0 ~= ui or z ~= zone then return nil end
        u, c = u + 0, c + 0
        if u > 0 and now < c * 1000000 then
          deadline = c
          used = u
          l = l + 0
          if l > now then last = l end
          -- The stored period still holds the last unit; else the one
          -- holding it (now's, when it is now).
          if last < e * 1000000 then start, fin, till = a + 0, e + 0, c
          elseif last ~= now then return nil
          elseif c > b2 then till = c end
        end
      end
      local fits = q <= limit
      local allowed = fits and used + q <= limit
      if allowed and q > 0 then
        local five = {0, limit, limit - used - q, -1, ceil_div(till * 1000000 - now, us_per)}
        local v = string.format('Q|%d|%d|%d|%d|%d|%d|%s', used + q, start, fin, till, last, ui, zone)
        if commit then set_state(key, raw, v, till * 1000) return five end
        return five, till * 1000000 - now, 0, set_state, key, raw, v, till * 1000
      end
      local reset, roff, retry = 0, 0, -1
      if deadline then
        roff = deadline * 1000000 - now
        reset = ceil_div(roff, us_per)
      end
      if fits and not allowed then retry = reset end
      local remaining = limit - used
      if allowed then remaining = remaining - q end
      if remaining < 0 then remaining = 0 end
      local five = {allowed and 0 or 1, limit, remaining, retry, reset}
      if not allowed and q > 0 and raw then
        local at = string.format('%d', deadline and deadline * 1000 or ceil_div(now, 1000))
        if commit then redis.call('PEXPIREAT', key, at, 'GT') return five end
        return five, roff, 0, redis.call, 'PEXPIREAT', key, at, 'GT'
      end
      return five, roff, 0
    elseif kind == 'SLIDE' then
      -- The list: element 0 the header S|base|clock|first|joined|units|entries|oldest
      -- (units: held by all entries; oldest: the oldest entry's offset from
      -- base), then the entries oldest first. The call reads the header, the
      -- front entries only when the oldest has left the window (they are
      -- dropped), the newest ones only when the new units may join them, and
      -- the front entries up to the one holding the limiting unit when
      -- limited.
      local ls, ws, ps = a, b, c
      if not (#ls > 0 and #ls <= 13 and #ws > 0 and #ws <= 13 and #ps > 0 and #ps <= 13 and #qs > 0 and #qs <= 13
        and string.find(ls .. ws .. ps .. qs, '^%d+$')) then return nil end
      local limit, win, prec, q = ls + 0, ws + 0, ps + 0, qs + 0
      local maxt = us_per == 1000 and 315360000000 or 315360000
      if not (limit >= 1 and limit <= 1000000 and win >= 1 and win <= maxt and prec <= win and q <= 1000000000000) then
        return nil
      end
      local W, D = win * us_per, prec * us_per
      local now = t[1] * 1000000 + t[2]
      local h = redis.pcall('LINDEX', key, '0')
      local base, clock, first, joined, units, cnt, oldest
      if h then
        if type(h) == 'string' then
          base, clock, first, joined, units, cnt, oldest = string.match(h, '^S|(%d+)|(%d+)|(%d+)|([01])|(%d+)|(%d+)|(%d+)$')
        end
        if base == nil then return nil end
        base, clock, first, joined, units, cnt = base + 0, clock + 0, first + 0, joined == '1', units + 0, cnt + 0
        oldest = base + oldest
      else
        clock, first, joined, units, cnt = 0, 0, false, 0, 0
      end
      -- The entries from index `from` (1: the oldest) to `cnt`, read in
      -- growing chunks, up to the first that is later than `cutoff` or holds
      -- the unit of rank `need` (1-based) among them: the entries and units
      -- before that one, and its instant (nil: none). nil when one is not
      -- an entry.
      local function walk(key, base, from, cnt, cutoff, need)
        local n, u, size = 0, 0, 4 -- a hot key drops about one entry a call
        while from <= cnt do
          local last = from + size - 1
          if last > cnt then last = cnt end
          local chunk = redis.call('LRANGE', key, string.format('%d', from), string.format('%d', last))
          for j = 1, #chunk do
            local o, c = string.match(chunk[j], '^(%d+):?(%d*)$')
            if o == nil then return nil end
            local x = base + o
            c = c == '' and 1 or c + 0
            if x > cutoff or u + c >= need then return n, u, x end
            n, u = n + 1, u + c
          end
          from = last + 1
          if size < 1024 then size = size * 4 end
        end
        return n, u, nil
      end
      local at = now
      if cnt > 0 and clock > now then at = clock end
      -- The entries that left the window (at - W, at].
      local cutoff = at - W
      local expired, gone, live = 0, 0, nil -- entries, their units, the oldest kept
      if cnt > 0 then
        if cutoff >= 0 and clock <= cutoff then expired, gone = cnt, units
        elseif cutoff >= 0 and oldest <= cutoff then
          expired, gone, live = walk(key, base, 1, cnt, cutoff, math.huge)
          if expired == nil then return nil end
        else live = oldest end
      end
      local used = units - gone
      if q > 0 and used + q <= limit then
        -- Allowed: drop the expired entries, record at `at`.
        local kept = cnt - expired
        local counted = used > kept -- an entry holds more than one unit
        if expired > 0 and not counted then joined = false end
        local nt, nn, twin = nil, nil, false -- the newest kept entry
        if kept > 0 and (D > 0 or at == clock) then
          local pair = redis.call('LRANGE', key, '-2', '-1')
          local o, c = string.match(pair[#pair], '^(%d+):?(%d*)$')
          if o == nil then return nil end
          nt, nn = base + o, c == '' and 1 or c + 0
          if D == 0 and nt == at and nn == 1 and kept >= 2 then
            o, c = string.match(pair[1], '^(%d+):?(%d*)$')
            if o == nil then return nil end
            twin = base + o == at and (c == '' or c + 0 == 1)
          end
        end
        if base == nil then base = at end
        local function enc(x, c, base)
          if c > 1 then return string.format('%d:%d', x - base, c) end
          return string.format('%d', x - base)
        end
        local back, set, push = 0, nil, {} -- entries removed at the back, LSET -1, pushed
        if D == 0 then
          if nt == at then
            if nn > 1 then set = enc(at, nn + q, base)
            else
              local singles = twin and 2 or 1
              if singles + q >= 3 then
                back = singles
                if not counted then joined = false end
                first = at
                push[1] = enc(at, singles + q, base)
              else push[1] = enc(at, 1, base) end
            end
          elseif q >= 3 then
            if not counted then joined = false end
            first = at
            push[1] = enc(at, q, base)
          else
            for j = 1, q do push[j] = enc(at, 1, base) end
          end
        else
          local fo = nt
          if nt and nn > 1 and first < nt then fo = first end
          if nt and at - fo < D then
            if nn == 1 and not counted then joined = false end
            set = enc(at, nn + q, base)
            if kept == 1 then live = at end
            first = fo
            joined = true
          elseif q > 1 then
            if not counted then joined = false end
            first = at
            push[1] = enc(at, q, base)
          else push[1] = enc(at, 1, base) end
        end
        local total = kept - back + #push
        if live == nil or kept == back then live = at end
        -- An entry older than base needs the list rewritten (the full code).
        if live < base then return nil end
        local five = {0, limit, limit - used - q, -1, ceil_div(at + W - now, us_per)}
        local header = string.format('S|%d|%d|%d|%s|%d|%d|%d', base, at, first, joined and '1' or '0',
          used + q, total, live - base)
        local function put(key, h, expired, back, set, push, header, ms)
          if h then
            if expired > 0 or back > 0 then
              redis.call('LTRIM', key, string.format('%d', expired), back == 0 and '-1' or string.format('%d', -1 - back))
            end
            if set then redis.call('LSET', key, '-1', set) end
            if #push > 0 then redis.call('RPUSH', key, unpack(push)) end
            redis.call('LSET', key, '0', header)
            -- Later only; a key without an expiry gets one.
            local at = string.format('%d', ms)
            if redis.call('PEXPIREAT', key, at, 'GT') == 0 and redis.call('PEXPIRETIME', key) == -1 then
              redis.call('PEXPIREAT', key, at)
            end
          else
            redis.call('RPUSH', key, header, unpack(push))
            redis.call('PEXPIREAT', key, string.format('%d', ms))
          end
        end
        local ms = ceil_div(at + W, 1000)
        if commit then put(key, h, expired, back, set, push, header, ms) return five end
        return five, at + W - now, 0, put, key, h, expired, back, set, push, header, ms
      end
      -- Not recorded: q == 0, more than the limit, or limited.
      local newest = nil
      if used > 0 then
        local o = string.match(redis.call('LINDEX', key, '-1'), '^(%d+):?%d*$')
        if o == nil then return nil end
        newest = base + o
      end
      local retry = -1
      if q <= limit and used + q > limit then
        -- The entry holding the kept unit of rank need - 1 (0-based).
        local n, _, x = walk(key, base, expired + 1, cnt, math.huge, used + q - limit)
        if n == nil then return nil end
        if x == nil then x = newest end
        retry = x + W > now and ceil_div(x + W - now, us_per) or 0
      end
      local reset, rx = 0, now
      if newest then
        rx = newest + W
        if rx > now then reset = ceil_div(rx - now, us_per) else rx = now end
      end
      local remaining = limit - used
      if q <= limit and used + q <= limit then remaining = remaining - q end
      if remaining < 0 then remaining = 0 end
      if remaining > limit then remaining = limit end
      local five = {(q > limit or used + q > limit) and 1 or 0, limit, remaining, retry, reset}
      if q > 0 and h and used + q > limit then
        local at = string.format('%d', ceil_div(rx, 1000))
        if commit then redis.call('PEXPIREAT', key, at, 'GT') return five end
        return five, rx - now, 0, redis.call, 'PEXPIREAT', key, at, 'GT'
      end
      return five, rx - now, 0
    elseif kind == 'SLICE' then
      -- The hash: field S holds window (µs)|slices|head|total|fields (the
      -- older scripts' keys: window|slices|head), field j the units
      -- admitted in slice j (slice j begins ceil(j x window / slices) ns
      -- after the epoch), kept from head - slices to head. Only a key of
      -- the same window and slices is decided here.
      local ls, ws, ss = a, b, c
      if not (#ls > 0 and #ls <= 10 and #ws > 0 and #ws <= 12 and #ss > 0 and #ss <= 5 and #qs > 0 and #qs <= 13
        and string.find(ls .. ws .. ss .. qs, '^%d+$')) then return nil end
      local limit, S, q = ls + 0, ss + 0, qs + 0
      local W = ws * us_per -- µs
      -- Every value below 2^52: window x slices in µs below 2^52, slices of
      -- at least 1 µs.
      if not (limit >= 1 and limit <= 4294967295 and W >= us_per and S >= 1 and S <= 86400 and q <= 1000000000000
        and W * S <= 4503599627370496 and W >= S) then return nil end
      local now = t[1] * 1000000 + t[2]
      -- The slice holding now: floor(now x S / W).
      local r = now % W
      local rs = r * S
      local idx = (now - r) / W * S + (rs - rs % W) / W
      -- Slice m begins ceil(m x W x 1000 / S) ns after the epoch: with m =
      -- b x S + k and W = a x S + r0, that is 1000 x (b x W + k x a) + k x
      -- qr + ceil(k x rW / S) ns, qr and rW the quotient and remainder of
      -- 1000 x r0 by S.
      local r0 = W % S
      local aW = (W - r0) / S
      local rW = 1000 * r0 % S
      local qr = (1000 * r0 - rW) / S
      -- When slice j's units stop counting (slice j + S + 1 begins): the
      -- offset from now in whole µs and its ns beyond them, and that instant
      -- in Unix ms rounded up.
      local function ends(j, S, W, aW, qr, rW, now)
        local m = j + S + 1
        local k = m % S
        local b = (m - k) / S
        local B = k * qr + ceil_div(k * rW, S)
        local B0 = B % 1000
        local at = b * W + k * aW + (B - B0) / 1000 -- µs
        local ms = B0 > 0 and (at - at % 1000) / 1000 + 1 or ceil_div(at, 1000)
        return at - now, B0, ms
      end
      -- ceil(x µs + r ns, in units of u µs), 0 <= r < 1000
      local function up(x, r, u)
        if r > 0 then return (x - x % u) / u + 1 end
        return ceil_div(x, u)
      end
      -- The header's usual form, W|S|head|total|fields (total: the units of
      -- slices head - S to head, every field's; fields: the slices stored):
      -- read with the slice of now, and the slices that leave by their
      -- computed names, never the whole key. An older key (W|S|head), an
      -- empty one, a limited call or more slices leaving than are stored
      -- read the whole key below.
      local hm = redis.pcall('HMGET', key, 'S', string.format('%d', idx))
      if type(hm) ~= 'table' or hm.err then return nil end
      local hw, hn, hh, ht, hc
      if hm[1] then hw, hn, hh, ht, hc = string.match(hm[1], '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)$') end
      local h = nil
      local head, js, ns, fs = nil, {}, {}, {} -- slot numbers, units, field names
      if hc and hw + 0 == W and hn + 0 == S and hh + 0 <= idx then
        local hd, total, nf = hh + 0, ht + 0, hc + 0
        local gone = idx - hd
        if gone > S + 1 then gone = S + 1 end
        local lo = hd - S -- the first slice that leaves
        if lo < 0 then gone = gone + lo; lo = 0 end
        local dead, dn = {}, 0
        if gone > 4000 then nf = -1 end -- unpack's bound: the whole key
        if gone > 0 and gone <= nf then
          local names = {}
          for x = 1, gone do names[x] = string.format('%d', lo + x - 1) end
          local got = redis.call('HMGET', key, unpack(names))
          for x = 1, gone do
            local v = got[x]
            if v then dead[#dead + 1] = names[x]; dn = dn + v end
          end
        end
        if gone <= nf then
          local used = total - dn
          local n0 = hm[2] and hm[2] + 0 or 0
          if q <= limit and used + q <= limit then
            if q == 0 then
              local off, r = 0, 0
              if used > 0 then off, r = ends(hd, S, W, aW, qr, rW, now) end
              return {0, limit, limit - used, -1, up(off, r, us_per)}, off, r
            end
            local off, r, ms = ends(idx, S, W, aW, qr, rW, now)
            local function put(key, idx, q, n0, used, nf, dead, W, S, ms)
              local slot = string.format('%d', idx)
              if n0 == 0 then nf = nf + 1 end
              redis.call('HSET', key, 'S', string.format('%d|%d|%s|%d|%d', W, S, slot, used + q, nf - #dead),
                slot, string.format('%d', n0 + q))
              if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
              if redis.call('PEXPIRETIME', key) < ms then redis.call('PEXPIREAT', key, string.format('%d', ms)) end
            end
            local five = {0, limit, limit - used - q, -1, up(off, r, us_per)}
            if commit then put(key, idx, q, n0, used, nf, dead, W, S, ms) return five end
            return five, off, r, put, key, idx, q, n0, used, nf, dead, W, S, ms
          end
        end
      end
      h = redis.pcall('HGETALL', key)
      if type(h) ~= 'table' or h.err then return nil end
      if #h > 0 then
        -- The head (nil: another window or slices), the slots into js, ns
        -- and fs; an error when a field or a count is not a number.
        local function read(h, W, S, js, ns, fs)
          local head
          for i = 1, #h, 2 do
            local f = h[i]
            if f == 'S' then
              local v = h[i + 1]
              local sw, sn, sh = string.match(v, '^(%d+)|(%d+)|(%d+)$')
              if not sh then sw, sn, sh = string.match(v, '^(%d+)|(%d+)|(%d+)|%d+|%d+$') end
              if sh and sw + 0 == W and sn + 0 == S then head = sh + 0 end
            else
              js[#js + 1] = f + 0
              fs[#fs + 1] = f
              ns[#ns + 1] = h[i + 1] + 0
            end
          end
          return head
        end
        local ok
        ok, head = pcall(read, h, W, S, js, ns, fs)
        if not ok or head == nil then return nil end
      end
      local current = idx
      if head and head > idx then current = head end
      local first = current - S
      if first < 0 then first = 0 end
      local used = 0
      for i = 1, #js do
        local j = js[i]
        if j >= first and j <= head then used = used + ns[i] end
      end
      if q <= limit and used + q <= limit then
        if q == 0 then
          local off, r = 0, 0
          if used > 0 then off, r = ends(head, S, W, aW, qr, rW, now) end
          return {0, limit, limit - used, -1, up(off, r, us_per)}, off, r
        end
        local off, r, ms = ends(current, S, W, aW, qr, rW, now)
        local function put(key, head, current, first, js, ns, fs, q, W, S, ms, used)
          local slot = string.format('%d', current)
          if head == nil then
            redis.call('HSET', key, 'S', string.format('%d|%d|%s|%d|1', W, S, slot, q), slot, string.format('%d', q))
            redis.call('PEXPIREAT', key, string.format('%d', ms))
            return
          end
          local n0, nf = nil, #js
          local dead = {}
          for i = 1, #js do
            local j = js[i]
            if j == current then n0 = ns[i] elseif j < first and current > head then dead[#dead + 1] = fs[i] end
          end
          if n0 == nil then n0 = 0; nf = nf + 1 end
          -- The header at every write (a key of the older scripts gets its
          -- total and fields here).
          redis.call('HSET', key, 'S', string.format('%d|%d|%s|%d|%d', W, S, slot, used + q, nf - #dead),
            slot, string.format('%d', n0 + q))
          if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
          -- Later only; a key without an expiry gets one.
          if redis.call('PEXPIRETIME', key) < ms then redis.call('PEXPIREAT', key, string.format('%d', ms)) end
        end
        local five = {0, limit, limit - used - q, -1, up(off, r, us_per)}
        if commit then put(key, head, current, first, js, ns, fs, q, W, S, ms, used) return five end
        return five, off, r, put, key, head, current, first, js, ns, fs, q, W, S, ms, used
      end
      -- Limited: more than the limit, or until enough units leave.
      local retry = -1
      if q <= limit then
        local live = {}
        for i = 1, #js do
          local j = js[i]
          if j >= first and j <= head and ns[i] > 0 then live[#live + 1] = i end
        end
        table.sort(live, function(a, b) return js[a] < js[b] end)
        local need, freed, at = used + q - limit, 0, head
        for x = 1, #live do
          freed = freed + ns[live[x]]
          if freed >= need then at = js[live[x]]; break end
        end
        local x, xr = ends(at, S, W, aW, qr, rW, now)
        retry = up(x, xr, us_per)
      end
      local off, r, ms = 0, 0, ceil_div(now, 1000)
      if used > 0 then off, r, ms = ends(head, S, W, aW, qr, rW, now) end
      local remaining = limit - used
      if remaining < 0 then remaining = 0 end
      local five = {1, limit, remaining, retry, up(off, r, us_per)}
      if q > 0 and head then
        local at = string.format('%d', ms)
        if commit then redis.call('PEXPIREAT', key, at, 'GT') return five end
        return five, off, r, redis.call, 'PEXPIREAT', key, at, 'GT'
      end
      return five, off, r
    elseif kind == 'LEASE' then
      -- The hash: field L, and field #id = expiry (Unix µs)|units per lease.
      -- Decided here when allowed; a limited call takes the full code (it
      -- orders the leases).
      local ls, ts, id = a, b, c
      if not (id and #id >= 1 and #id <= 128 and #ls > 0 and #ls <= 7 and #ts > 0 and #ts <= 12 and #qs > 0 and #qs <= 13
        and string.find(ls .. ts .. qs, '^%d+$')) then return nil end
      local limit, ttl, q = ls + 0, ts + 0, qs + 0
      if not (limit >= 1 and limit <= 1000000 and ttl >= 1 and ttl <= 315360000000000 / us_per and q <= limit) then
        return nil
      end
      local now = t[1] * 1000000 + t[2]
      local expiry = now + ttl * us_per
      -- The hash's field H: the units of every stored lease, the earliest
      -- expiry (a lower bound) and the latest (exact), which every write
      -- keeps. While no stored lease has expired (now < the earliest), a
      -- call reads H and its own lease alone: O(1), however many are held.
      -- Else (or with no H: a key of an older layout, migrated here on
      -- write), HGETALL, O(leases held), which drops the expired ones.
      local function put(key, fresh, own, expiry, q, dead, ms, hv)
        local v = string.format('%d|%d', expiry, q)
        if fresh then
          redis.call('HSET', key, 'L', '1', own, v, 'H', hv)
          redis.call('PEXPIREAT', key, string.format('%d', ms))
          return
        end
        redis.call('HSET', key, own, v, 'H', hv)
        if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
        -- Later only; a key without an expiry gets one.
        local at = string.format('%d', ms)
        if redis.call('PEXPIREAT', key, at, 'GT') == 0 and redis.call('PEXPIRETIME', key) == -1 then
          redis.call('PEXPIREAT', key, at)
        end
      end
      local own = '#' .. id
      if q > 0 then
        local hm = redis.pcall('HMGET', key, 'H', 'L', own)
        if type(hm) ~= 'table' or hm.err then return nil end
        local hh, hmin, hmax
        if hm[1] and hm[2] then hh, hmin, hmax = string.match(hm[1], '^(%d+)|(%d+)|(%d+)$') end
        if hh and now < hmin + 0 then
          hh, hmin, hmax = hh + 0, hmin + 0, hmax + 0
          local oe, ow = 0, 0
          if hm[3] then
            oe, ow = string.match(hm[3], '^(%d+)|(%d+)$')
            if oe == nil then return nil end
            oe, ow = oe + 0, ow + 0
          end
          -- The latest of the others is H's unless it is this lease's, moved
          -- earlier: then the full read below.
          if not (oe == hmax and oe > expiry) then
            if hh - ow + q > limit then return nil end
            local x = expiry > hmax and expiry or hmax
            local hv = string.format('%d|%d|%d', hh - ow + q, expiry < hmin and expiry or hmin, x)
            local five, ms = {0, limit, limit - (hh - ow) - q, -1, ceil_div(x - now, us_per)}, ceil_div(x, 1000)
            if commit then put(key, false, own, expiry, q, {}, ms, hv) return five end
            return five, x - now, 0, put, key, false, own, expiry, q, {}, ms, hv
          end
        end
      end
      local h = redis.pcall('HGETALL', key)
      local marked = false
      local held, own_w, latest, others_latest, others_min = 0, 0, now, now, nil
      local dead = {}
      if type(h) ~= 'table' or h.err then return nil end
      if #h > 0 then
        for i = 1, #h, 2 do
          local f = h[i]
          if f == 'L' then marked = true
          elseif f == own and q > 0 then
            -- A lease renewed or taken counts only its new units: its value
            -- is checked, not read.
            if not string.find(h[i + 1], '^%d+|%d+$') then return nil end
          elseif string.byte(f, 1) == 35 then -- '#'
            local e, lw = string.match(h[i + 1], '^(%d+)|(%d+)$')
            if e == nil then return nil end
            e, lw = e + 0, lw + 0
            if e > latest then latest = e end
            if e > now then
              held = held + lw
              if f == own then own_w = lw
              else
                if e > others_latest then others_latest = e end
                if others_min == nil or e < others_min then others_min = e end
              end
            elseif f ~= own then dead[#dead + 1] = f end
          end
        end
        if not marked then return nil end
      end
      if held - own_w + q > limit then return nil end
      if q == 0 then
        local remaining = limit - held
        if remaining < 0 then remaining = 0 end
        return {0, limit, remaining, -1, ceil_div(latest - now, us_per)}, latest - now, 0
      end
      local x = expiry > others_latest and expiry or others_latest
      local lo = (others_min == nil or expiry < others_min) and expiry or others_min
      local hv = string.format('%d|%d|%d', held - own_w + q, lo, x)
      local five, ms = {0, limit, limit - (held - own_w) - q, -1, ceil_div(x - now, us_per)}, ceil_div(x, 1000)
      if commit then put(key, #h == 0, own, expiry, q, dead, ms, hv) return five end
      return five, x - now, 0, put, key, #h == 0, own, expiry, q, dead, ms, hv
    end
    return nil
  end

  if entry == 'limiter' then
    -- A limiter's usual call (its parameters, [quantity], [MS], and
    -- PRECISION for RL.SLIDE, BLOCK but for RL.LEASE), on a key it holds
    -- or none, decided by fast() with as few calls as can be. Anything else
    -- (errors included) goes to lib() before any write, and is answered
    -- there; so does a limited call with BLOCK (it may start a block: fast()
    -- decides it without writing, and the writes are made only when it is
    -- allowed, where BLOCK changes nothing), and a key that holds a block's
    -- mark (fast() refuses its value).
    local name = arg
    local A = ARGV
    local o = 1 -- the parameters follow the head
    local np = (name == 'SLIDE' or name == 'QUOTA') and 2 or 3
    if A[o + np] then
      local i = o + np + 1
      local qs, us_per, third = '1', 1000000, A[4]
      if name == 'SLIDE' then third = '0' elseif name == 'QUOTA' then third = nil end
      -- Any word but an option is the quantity (fast() checks its digits).
      local w = A[i]
      if w and w ~= 'MS' and w ~= 'ms' and w ~= 'PRECISION' and w ~= 'precision' and w ~= 'BLOCK' and w ~= 'block'
        and w ~= 'MAXWAIT' and w ~= 'maxwait' then
        qs = w; i = i + 1
      end
      local ok, ms_seen, p_seen, bs, ws = true, false, false, nil, nil
      while ok and A[i] do
        w = A[i]
        if (w == 'MS' or w == 'ms') and not ms_seen then ms_seen = true; us_per = 1000; i = i + 1
        elseif name == 'SLIDE' and (w == 'PRECISION' or w == 'precision') and not p_seen and A[i + 1] then
          p_seen = true; third = A[i + 1]; i = i + 2
        elseif name ~= 'LEASE' and (w == 'BLOCK' or w == 'block') and not bs and A[i + 1] then
          bs = A[i + 1]; i = i + 2
        elseif name == 'THROTTLE' and (w == 'MAXWAIT' or w == 'maxwait') and not ws and A[i + 1] then
          ws = A[i + 1]; i = i + 2
        else ok = false end
      end
      -- MAXWAIT's value: 0 to the maximum time, in ns (exact: a multiple of
      -- 10^6 below 2^59 whose odd part is below 2^53).
      local wait
      if ws then
        if #ws <= 12 and string.find(ws, '^%d+$') and ws + 0 <= (us_per == 1000 and 315360000000 or 315360000) then
          wait = ws * us_per * 1000
        else ok = false end
      end
      -- BLOCK's value: 1 to the maximum time (else the full code's error).
      if bs and not (#bs <= 12 and string.find(bs, '^%d+$') and bs + 0 >= 1
        and bs + 0 <= (us_per == 1000 and 315360000000 or 315360000)) then ok = false end
      -- Now: the server's TIME, or the clock the head passes (no zone).
      local t
      if ok then
        local h = A[1]
        if h == '' then
          t = redis.pcall('TIME')
          if t.err then return {err = 'ERR ratelimit: TIME refused in scripts: ' .. t.err} end
        else
          local hs, hu = string.match(h, '^(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d)$')
          if hs then t = {hs, hu} end
        end
      end
      if t and bs then
        -- With BLOCK: decided without writing; allowed, its writes made.
        local function keep(...) return {n = select('#', ...), ...} end
        local d = keep(fast(name, KEYS[1], A[o + 1], A[o + 2], third, qs, us_per, t, gcra, ceil_div, false, wait))
        if d[1] and d[1][1] == 0 then
          if d[4] then d[4](unpack(d, 5, d.n)) end
          return d[1]
        end
      elseif t then
        -- The decision, its writes made; its reply (nil: the full code's).
        local five = fast(name, KEYS[1], A[o + 1], A[o + 2], third, qs, us_per, t, gcra, ceil_div, true, wait)
        if five then return five end
      end
    end
  elseif entry == 'several' then
    -- RL.ALLOW and RL.PEEK numkeys key [key ...] spec [spec ...] [QUANTITY q]
    -- [MS] [ID id] with THROTTLE, SLIDE (PRECISION), SLICE and LEASE specs,
    -- each with BLOCK (but LEASE) and UNITS, when no limit is limited: each
    -- decided by fast(), then, for RL.ALLOW, the writes of every limit
    -- that takes units. Anything else (SHADOW, MAXWAIT), a limited call
    -- (which may start a block) included, goes to lib() before any write.
    local write = arg
    local A = ARGV
    local SPECS = {THROTTLE = 'THROTTLE', throttle = 'THROTTLE', SLIDE = 'SLIDE', slide = 'SLIDE',
      SLICE = 'SLICE', slice = 'SLICE', LEASE = 'LEASE', lease = 'LEASE'}
    local nk = A[2]
    nk = nk and #nk <= 2 and string.find(nk, '^%d+$') and nk + 0
    if nk and nk >= 1 and nk <= 16 and #KEYS == nk then
      local ok = true
      -- A key named twice is an error (the full code's).
      for i = 2, nk do
        for j = 1, i - 1 do if KEYS[i] == KEYS[j] then ok = false end end
      end
      local at = 3 -- ARGV: the head, numkeys, then the specs
      local specs, leases = {}, false
      for s = 1, nk do
        if not ok then break end
        local kind = SPECS[A[at] or '']
        if kind == nil then ok = false; break end
        local np = (kind == 'SLIDE' or kind == 'LEASE') and 2 or 3
        local a, b, c = A[at + 1], A[at + 2], np == 3 and A[at + 3] or '0'
        if a == nil or b == nil or c == nil then ok = false; break end
        at = at + 1 + np
        -- The spec's options, any order, each once: PRECISION (SLIDE),
        -- BLOCK (not LEASE; checked below, once MS is known) and UNITS (the
        -- limit's own quantity, which fast() checks as it checks one).
        local p_seen, bs, us = false, nil, nil
        while ok and A[at + 1] do
          local w = A[at]
          if kind == 'SLIDE' and (w == 'PRECISION' or w == 'precision') and not p_seen then p_seen = true; c = A[at + 1]
          elseif kind ~= 'LEASE' and (w == 'BLOCK' or w == 'block') and not bs then bs = A[at + 1]
          elseif (w == 'UNITS' or w == 'units') and not us then us = A[at + 1]
          else break end
          at = at + 2
        end
        if kind == 'LEASE' then leases = true end
        specs[s] = {kind, a, b, c, us, bs}
      end
      local qs, us_per, id, q_seen = '1', 1000000, nil, false
      while ok and A[at] do
        local w = A[at]
        if (w == 'MS' or w == 'ms') and us_per ~= 1000 then us_per = 1000; at = at + 1
        elseif (w == 'QUANTITY' or w == 'quantity') and not q_seen and A[at + 1] then q_seen = true; qs = A[at + 1]; at = at + 2
        elseif (w == 'ID' or w == 'id') and id == nil and A[at + 1] then id = A[at + 1]; at = at + 2
        else ok = false end
      end
      -- QUANTITY's value, which fast() may not see (UNITS on every spec).
      if not (#qs > 0 and #qs <= 13 and string.find(qs, '^%d+$') and qs + 0 <= 1000000000000) then ok = false end
      for s = 1, nk do
        -- BLOCK's value: 1 to the maximum time (else the full code's error).
        local bs = ok and specs[s][6]
        if bs and not (#bs <= 12 and string.find(bs, '^%d+$') and bs + 0 >= 1
          and bs + 0 <= (us_per == 1000 and 315360000000 or 315360000)) then ok = false end
      end
      local t
      if ok and leases == (id ~= nil) then
        local h = A[1]
        if h == '' then
          t = redis.pcall('TIME')
          if t.err then return {err = 'ERR ratelimit: TIME refused in scripts: ' .. t.err} end
        else
          local hs, hu = string.match(h, '^(%d%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d)$')
          if hs then t = {hs, hu} end
        end
      end
      if t then
        -- A decision kept whole: the reply, the reset, the writes and their
        -- arguments, and how many values there are (an argument may be nil).
        local function keep(...) return {n = select('#', ...), ...} end
        local ds, fives = {}, {}
        for s = 1, nk do
          local sp = specs[s]
          local d = keep(fast(sp[1], KEYS[s], sp[2], sp[3], sp[1] == 'LEASE' and id or sp[4], sp[5] or qs, us_per, t,
            gcra, ceil_div))
          if d[1] == nil or d[1][1] == 1 then ok = false; break end
          ds[s], fives[s] = d, d[1]
        end
        if ok then
          -- The binding limit: the fewest remaining, then the latest reset
          -- (exact: µs, then ns), then the first.
          local b = 1
          for s = 2, nk do
            local x, y = ds[s], ds[b]
            if x[1][3] < y[1][3] or (x[1][3] == y[1][3] and (x[2] > y[2] or (x[2] == y[2] and x[3] > y[3]))) then b = s end
          end
          if write then
            for s = 1, nk do
              local d = ds[s]
              if d[4] and (specs[s][5] or qs) + 0 > 0 then d[4](unpack(d, 5, d.n)) end
            end
          end
          local f = fives[b]
          return {f[1], f[2], f[3], f[4], f[5], b, fives}
        end
      end
    end
  end

  -- The whole of the exact code: every command, every option, every error.
  local function lib()
    local NOW -- µs since the epoch, from the server's TIME
    local NOW_NS -- the same in ns, a big integer
    -- A: the head (ARGV[1]: the clock and the zones, lib/zones.lua), then
    -- the module's argv[1..n] (the keys back in their places) as A[2..n+1].
    local A = {ARGV[1] or ''}
    local NARGS
    do
      local n, i = 1, 2
      if entry == 'several' and ARGV[i] then n = 2; A[2] = ARGV[i]; i = i + 1 end
      for k = 1, #KEYS do n = n + 1; A[n] = KEYS[k] end
      for j = i, #ARGV do n = n + 1; A[n] = ARGV[j] end
      NARGS = n - 1
    end
    local function arg(i) return A[i + 1] end

    local fmod = math.fmod
    -- Exact quotient and remainder of non-negative integers below 2^53.
    local function divmod(n, d)
      local r = fmod(n, d)
      return (n - r) / d, r
    end
    local function numstr(n) return string.format('%d', n) end

    -- Big integers: arrays of base-10^4 limbs, least significant first.
    local BASE = 10000
    local function big(n)
      local t = {}
      repeat
        local q, r = divmod(n, BASE)
        t[#t + 1] = r
        n = q
      until n == 0
      return t
    end
    local function trim(t)
      local n = #t
      while n > 1 and t[n] == 0 do t[n] = nil; n = n - 1 end
      return t
    end
    local function bcmp(a, b)
      if #a ~= #b then return #a < #b and -1 or 1 end
      for i = #a, 1, -1 do
        if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
      end
      return 0
    end
    local function badd(a, b)
      local t, carry = {}, 0
      for i = 1, math.max(#a, #b) do
        local s = (a[i] or 0) + (b[i] or 0) + carry
        if s >= BASE then t[i] = s - BASE; carry = 1 else t[i] = s; carry = 0 end
      end
      if carry > 0 then t[#t + 1] = carry end
      return t
    end
    -- a - b, or 0 when b > a.
    local function bsub(a, b)
      if bcmp(a, b) <= 0 then return {0} end
      local t, borrow = {}, 0
      for i = 1, #a do
        local s = a[i] - (b[i] or 0) - borrow
        if s < 0 then t[i] = s + BASE; borrow = 1 else t[i] = s; borrow = 0 end
      end
      return trim(t)
    end
    local function bmul(a, b)
      local t = {}
      for i = 1, #a + #b do t[i] = 0 end
      for i = 1, #a do
        local carry, ai = 0, a[i]
        if ai ~= 0 then
          for j = 1, #b do
            local s = t[i + j - 1] + ai * b[j] + carry
            local q, r = divmod(s, BASE)
            t[i + j - 1] = r
            carry = q
          end
          local k = i + #b
          while carry > 0 do
            local s = t[k] + carry
            local q, r = divmod(s, BASE)
            t[k] = r
            carry = q
            k = k + 1
          end
        end
      end
      return trim(t)
    end
    -- Quotient and remainder by d, 1 <= d < 9 * 10^11.
    local function bdiv(a, d)
      local t, r = {}, 0
      for i = #a, 1, -1 do
        local q
        q, r = divmod(r * BASE + a[i], d)
        t[i] = q
      end
      return trim(t), r
    end
    local function bdiv_ceil(a, d)
      local q, r = bdiv(a, d)
      if r > 0 then q = badd(q, {1}) end
      return q
    end
    -- The value as a double; only for values known to be below 2^53.
    local function bnum(a)
      local n = 0
      for i = #a, 1, -1 do n = n * BASE + a[i] end
      return n
    end
    local function bstr(a)
      local parts = {string.format('%d', a[#a])}
      for i = #a - 1, 1, -1 do parts[#parts + 1] = string.format('%04d', a[i]) end
      return table.concat(parts)
    end
    local function bparse(s)
      local t = {}
      local i = #s
      while i >= 1 do
        local j = math.max(1, i - 3)
        t[#t + 1] = tonumber(string.sub(s, j, i))
        i = j - 1
      end
      if #t == 0 then t[1] = 0 end
      return trim(t)
    end
    local function bmax(a, b) if bcmp(a, b) >= 0 then return a end return b end
    local function bmin(a, b) if bcmp(a, b) <= 0 then return a end return b end
    local BZERO = {0}
    local function biszero(a) return #a == 1 and a[1] == 0 end

    -- A command with many arguments, sent in chunks that unpack can take
    -- (`per` arguments at a time, a multiple of the arguments' group size).
    local function call_chunked(cmd, key, args, per, head)
      local i = 1
      if head then
        local first = {}
        for j = 1, #head do first[#first + 1] = head[j] end
        for j = 1, math.min(per, #args) do first[#first + 1] = args[j] end
        redis.call(cmd, key, unpack(first))
        i = per + 1
      end
      while i <= #args do
        redis.call(cmd, key, unpack(args, i, math.min(i + per - 1, #args)))
        i = i + per
      end
    end

    -- Errors -------------------------------------------------------------------

    local function fail(text) return {err = text} end
    local function err_arity(name)
      return fail("ERR wrong number of arguments for '" .. name .. "' command")
    end
    local WRONGTYPE = {err = 'WRONGTYPE Operation against a key holding the wrong kind of value'}

    -- An argument as the module shows it in errors: printable ASCII, 32 at most.
    local function printable(s)
      local out = {}
      for i = 1, math.min(#s, 32) do
        local b = string.byte(s, i)
        if b >= 33 and b <= 126 then out[#out + 1] = string.char(b) else out[#out + 1] = '?' end
      end
      local text = table.concat(out)
      if #s > 32 then text = text .. '...' end
      return text
    end

    -- Errors are thrown as tables {e = text} and turned into replies at the top.
    local function throw(text) error({e = text}, 0) end

    local MAX_QUANTITY = 1000000000000
    local MAX_SECONDS = 315360000
    local S_NS, MS_NS = 1000000000, 1000000

    -- A decimal integer with nothing around it (leading zeros allowed) in
    -- min..max; nil otherwise. Every max here is below 10^16.
    local function parse_int(s, min, max)
      if s == nil or not string.find(s, '^%d+$') then return nil end
      local digits = string.gsub(s, '^0+', '')
      if #digits > 16 then return nil end
      local n = tonumber(digits == '' and '0' or digits)
      if n < min or n > max then return nil end
      return n
    end
    local function range_error(name, min, max, unit)
      local suffix = ''
      if unit == S_NS then suffix = ' (seconds)' elseif unit == MS_NS then suffix = ' (milliseconds, with MS)' end
      return 'ERR ' .. name .. ' must be an integer from ' .. numstr(min) .. ' to ' .. numstr(max) .. suffix
    end
    local function integer(s, name, min, max)
      local n = parse_int(s, min, max)
      if n == nil then throw(range_error(name, min, max, nil)) end
      return n
    end
    local function lease_id(s)
      if s == nil or #s < 1 or #s > 128 then throw('ERR lease_id must be 1 to 128 bytes') end
      return s
    end
    local function upper(s) return string.upper(s) end
    local function max_time(unit) if unit == S_NS then return MAX_SECONDS end return MAX_SECONDS * 1000 end
    -- MAXWAIT w, in ns (a big integer): 0 to the maximum time in `unit`.
    local function max_wait(s, unit)
      local w = parse_int(s, 0, max_time(unit))
      if w == nil then throw(range_error('MAXWAIT', 0, max_time(unit), unit)) end
      return bmul(big(w), big(unit))
    end

    -- The kinds: parameters (name, kind, min, max) and options, as the module's table.
    -- BLOCK b: an option of every kind but LEASE (its value at P.block, µs).
    local BLOCK = {'BLOCK', 'dur', block = true}
    local UNITS = {'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'}
    local KINDS = {
      THROTTLE = {name = 'THROTTLE', params = {{'max_burst', 'int', 0, 1000000000000}, {'count', 'int', 1, 4294967295}, {'period', 'dur'}}, options = {BLOCK}},
      SLIDE = {name = 'SLIDE', params = {{'limit', 'int', 1, 1000000}, {'window', 'dur'}}, options = {{'PRECISION', 'dur0'}, BLOCK}},
      SLICE = {name = 'SLICE', params = {{'limit', 'int', 1, 4294967295}, {'window', 'dur'}, {'slices', 'int', 1, 86400}}, options = {BLOCK}},
      LEASE = {name = 'LEASE', params = {{'limit', 'int', 1, 1000000}, {'ttl', 'dur'}}, options = {}, takes_id = true, no_refund = true},
      QUOTA = {name = 'QUOTA', params = {{'limit', 'int', 1, 1000000000000000}, {'unit', 'word'}}, options = {{'TZ', 'text'}, BLOCK}},
    }
    local KIND_WORDS = 'THROTTLE, SLIDE, SLICE, LEASE or QUOTA'

    local function value_error(p, unit)
      local name, kind = p[1], p[2]
      if kind == 'dur' then return range_error(name, 1, max_time(unit), unit) end
      if kind == 'dur0' then return range_error(name, 0, max_time(unit), unit) end
      if kind == 'int' then return range_error(name, p[3], p[4], nil) end
      if kind == 'word' then return 'ERR ' .. name .. ' must be one of ' .. table.concat(UNITS, ', ') end
      return 'ERR ' .. name .. ' must be 1 to 64 bytes'
    end
    local function option_index(kind, word)
      if word == nil then return nil end
      for i, o in ipairs(kind.options) do
        if upper(word) == o[1] then return i end
      end
      return nil
    end
    local function expects(kind)
      local names = {}
      for _, p in ipairs(kind.params) do names[#names + 1] = p[1] end
      for _, o in ipairs(kind.options) do
        if not o.block then names[#names + 1] = '[' .. o[1] .. ' value]' end
      end
      return table.concat(names, ' ')
    end

    -- The head (A[1], ARGV[1] of every command; clients/lua/README.md):
    -- clock (";" zone)*. clock: '' (the script reads the server's TIME) or the
    -- Unix µs the client passes. zone: written|canonical|lo|off0(|t|off)*, the
    -- UTC offsets of a zone the client's zone database knows, for the TZ value
    -- written as the command line has it: off0 in effect at lo (Unix s), then
    -- each change at t to off, up to lo + 800 days.
    local CLOCK, ZONES = A[1], {}
    local TIME_REFUSED = 'ERR ratelimit: TIME refused in scripts: '
    do
      local cut = string.find(CLOCK, ';', 1, true)
      if cut then
        for seg in string.gmatch(string.sub(CLOCK, cut + 1) .. ';', '([^;]*);') do
          local written = string.match(seg, '^([^|]*)|')
          if written then ZONES[written] = seg end
        end
        CLOCK = string.sub(CLOCK, 1, cut - 1)
      end
    end
    local function zone_printable(s)
      local out = {}
      for i = 1, math.min(#s, 64) do
        local b = string.byte(s, i)
        if b == 92 then out[#out + 1] = '\\\\'
        elseif b >= 32 and b <= 126 then out[#out + 1] = string.char(b)
        else out[#out + 1] = string.format('\\x%02x', b) end
      end
      local text = table.concat(out)
      if #s > 64 then text = text .. '...' end
      return text
    end
    -- The zone of a QUOTA spec's TZ value (nil: none, UTC), as the module reads
    -- it: {name = the name stored in the key, fixed = the offset (UTC, +HH:MM)}
    -- or {name, lo, hi, ts = {t...}, offs = {off0, off...}} from the head; the
    -- module's error for a value neither names.
    local function read_zone(name)
      if name == nil or upper(name) == 'UTC' then return {name = 'UTC', fixed = 0} end
      local sign = string.sub(name, 1, 1)
      if sign == '+' or sign == '-' then
        local h, m = string.match(name, '^[+-](%d%d):(%d%d)$')
        if h == nil or tonumber(m) >= 60 then
          throw("ERR unknown time zone '" .. zone_printable(name) .. "'")
        end
        local off = (tonumber(h) * 60 + tonumber(m)) * 60
        if off > 18 * 3600 then
          throw("ERR time zone offset '" .. zone_printable(name) .. "' is out of range (-18:00 to +18:00)")
        end
        if off == 0 then return {name = 'UTC', fixed = 0} end
        return {name = name, fixed = sign == '-' and -off or off}
      end
      local seg = ZONES[name]
      if seg == nil then throw("ERR unknown time zone '" .. zone_printable(name) .. "'") end
      local fields = {}
      for f in string.gmatch(string.sub(seg, #name + 2), '[^|]+') do fields[#fields + 1] = f end
      local z = {name = fields[1], lo = tonumber(fields[2]), ts = {}, offs = {tonumber(fields[3])}}
      if z.lo == nil or z.offs[1] == nil or #fields % 2 ~= 1 then
        throw("ERR ratelimit: the head's offsets of time zone '" .. zone_printable(name) .. "' are malformed")
      end
      z.hi = z.lo + 800 * 86400
      for i = 4, #fields, 2 do
        local t, off = tonumber(fields[i]), tonumber(fields[i + 1])
        if t == nil or off == nil or t <= (z.ts[#z.ts] or z.lo) then
          throw("ERR ratelimit: the head's offsets of time zone '" .. zone_printable(name) .. "' are malformed")
        end
        z.ts[#z.ts + 1] = t
        z.offs[#z.offs + 1] = off
      end
      return z
    end
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
    local function read_params(kind, words, options, unit)
      local v = {}
      for i, p in ipairs(kind.params) do
        local w = words[i]
        if p[2] == 'int' then
          v[i] = parse_int(w, p[3], p[4])
        elseif p[2] == 'dur' then
          v[i] = parse_int(w, 1, max_time(unit))
        elseif p[2] == 'word' then
          for j, u in ipairs(UNITS) do if w ~= nil and upper(w) == u then v[i] = j end end
        end
        if v[i] == nil then throw(value_error(p, unit)) end
      end
      local opt = {}
      for i, o in ipairs(kind.options) do
        local w = options[i]
        if w ~= nil then
          if o[2] == 'dur0' or o[2] == 'dur' then
            opt[i] = parse_int(w, o[2] == 'dur' and 1 or 0, max_time(unit))
            if opt[i] == nil then throw(value_error(o, unit)) end
          else
            if #w < 1 or #w > 64 then throw(value_error(o, unit)) end
            opt[i] = w
          end
        end
      end
      local us_per = unit / 1000 -- microseconds per unit
      local P = {kind = kind.name, unit = unit}
      for i, o in ipairs(kind.options) do
        if o.block and opt[i] then P.block = opt[i] * us_per end
      end
      if kind.name == 'THROTTLE' then
        P.cap = v[1] + 1
        P.count = v[2]
        P.p = v[3]
        P.period = bmul(big(v[3]), big(unit)) -- ns
        -- (max_burst + 1) x period <= 100 years x count, in ns
        local tol = bmul(big(P.cap), P.period)
        if bcmp(tol, bmul(big(3153600000000000000 / 1000), bmul(big(1000), big(P.count)))) > 0 then
          throw('ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)')
        end
        P.tolerance = tol
      elseif kind.name == 'SLIDE' then
        P.limit = v[1]
        P.window = v[2] * us_per -- µs
        local d = opt[1] or 0
        if d > v[2] then throw('ERR PRECISION must be at most the window') end
        P.precision = d * us_per
      elseif kind.name == 'SLICE' then
        P.limit = v[1]
        P.window = v[2] * us_per
        P.slices = v[3]
        -- The Lua backend keeps slice indexes as doubles: a slice of at least
        -- 256 ns keeps them below 2^53 until the year 2500.
        if P.window * 1000 < P.slices * 256 then
          throw('ERR the Lua backend needs window / slices of at least 256 ns (the module takes down to 1 ns)')
        end
      elseif kind.name == 'LEASE' then
        P.limit = v[1]
        P.ttl = v[2] * us_per
      elseif kind.name == 'QUOTA' then
        P.limit = v[1]
        P.unit_index = v[2]
        P.zone = read_zone(opt[1])
      end
      return P
    end

    -- Reads `MS` or `AT` at words[i]; true when it was one of them.
    local function ms_or_at(words, i, tail)
      local w = upper(words[i])
      if w == 'MS' then
        if tail.unit == MS_NS then throw('ERR MS is given more than once') end
        tail.unit = MS_NS
        return true
      elseif w == 'AT' then
        throw("ERR AT is accepted only from the master or the AOF: it carries the master's clock")
      end
      return false
    end

    -- Finds the spec starting at words[at]: kind, parameter words, options,
    -- next, and (in a several-limit call, index > 0) its own options, any
    -- order with the kind's: {units = n, shadow = true}. `no_block`: RL.REFUND
    -- and RL.CHARGE, whose specs take no BLOCK (the word is then not an
    -- option).
    local function find_spec(words, at, index, no_block)
      local word = words[at]
      local kind = word and KINDS[upper(word)]
      if kind == nil then
        local prefix = index == 0 and '' or ('spec ' .. index .. ': ')
        throw('ERR ' .. prefix .. "unknown algorithm '" .. printable(word or '') .. "' (expected " .. KIND_WORDS .. ')')
      end
      local n = #kind.params
      if at + n > #words then
        if index == 0 then throw('ERR ' .. kind.name .. ' expects ' .. expects(kind)) end
        throw('ERR spec ' .. index .. ' (' .. kind.name .. '): expects ' .. expects(kind))
      end
      local params = {}
      for i = 1, n do params[i] = words[at + i] end
      local options = {}
      local limit = {}
      local nxt = at + 1 + n
      local function spec_err(text)
        if index == 0 then throw(text) end
        throw('ERR spec ' .. index .. ' (' .. kind.name .. '): ' .. string.sub(text, 5))
      end
      while true do
        local w = words[nxt] and upper(words[nxt])
        local o = option_index(kind, w)
        if kind.name == 'LEASE' and not no_block and w == 'BLOCK' then spec_err('ERR LEASE takes no BLOCK') end
        if o and not (no_block and kind.options[o].block) then
          local value = words[nxt + 1]
          if value == nil then spec_err(value_error(kind.options[o], S_NS)) end
          if options[o] ~= nil then spec_err('ERR ' .. kind.options[o][1] .. ' is given more than once') end
          options[o] = value
          nxt = nxt + 2
        elseif index > 0 and w == 'UNITS' then
          if limit.units then spec_err('ERR UNITS is given more than once') end
          limit.units = parse_int(words[nxt + 1], 0, MAX_QUANTITY)
          if limit.units == nil then spec_err(range_error('UNITS', 0, MAX_QUANTITY, nil)) end
          nxt = nxt + 2
        elseif index > 0 and w == 'SHADOW' then
          if limit.shadow then spec_err('ERR SHADOW is given more than once') end
          limit.shadow = true
          nxt = nxt + 1
        else
          break
        end
      end
      if limit.shadow then
        for i, o in ipairs(kind.options) do
          if o.block and options[i] ~= nil then spec_err('ERR SHADOW takes no BLOCK') end
        end
      end
      return kind, params, options, nxt, limit
    end
    -- Time and keys -----------------------------------------------------------

    -- Now, in µs: the head's clock, else the server's TIME. A server that
    -- refuses TIME in scripts gets the answer that tells the client to pass
    -- its clock (TIME_REFUSED; clients/lua/README.md).
    local function read_clock()
      if CLOCK == '' then
        local t = redis.pcall('TIME')
        if t.err then throw(TIME_REFUSED .. t.err) end
        NOW = tonumber(t[1]) * 1000000 + tonumber(t[2])
      else
        NOW = #CLOCK <= 16 and string.find(CLOCK, '^%d+$') and tonumber(CLOCK)
        if not NOW then throw("ERR ratelimit: the head's clock '" .. printable(CLOCK) .. "' is not Unix microseconds") end
      end
      NOW_NS = bmul(big(NOW), big(1000))
    end
    local function us_ns(us) return bmul(big(us), big(1000)) end
    -- ns offset of an instant in µs from now (0 when before).
    local function off_us(us) if us <= NOW then return BZERO end return big((us - NOW) * 1000) end

    -- What a key holds: the raw value of the kind's representation, nil when
    -- missing; WRONGTYPE when it holds anything else.
    local TAGS = {THROTTLE = 'G|', QUOTA = 'Q|'}
    local function key_type(key)
      local t = redis.call('TYPE', key)
      if type(t) == 'table' then t = t.ok end
      return t
    end
    -- BLOCK: a blocked key's block end (Unix µs) is kept in the kind's own
    -- value, so that a key never blocked keeps the representation it has
    -- without BLOCK: a string (THROTTLE, QUOTA) takes the prefix `B<end>|`,
    -- SLIDE's header (list element 0) and SLICE's field `S` one more field,
    -- `|<end>`. Every fast path's pattern refuses the marked value, so a
    -- marked key takes the full code, and each write (the kind's store, which
    -- writes the value or header anew) drops a block that has ended.
    local function unmark(kind, v)
      local e, rest
      if kind == 'THROTTLE' or kind == 'QUOTA' then e, rest = string.match(v, '^B(%d+)|(.*)$')
      elseif kind == 'SLIDE' then rest, e = string.match(v, '^(S|%d+|%d+|%d+|[01]|%d+|%d+|%d+)|(%d+)$')
      elseif kind == 'SLICE' then rest, e = string.match(v, '^(%d+|%d+|%d+|%d+|%d+)|(%d+)$') end
      if e == nil then return v, 0 end
      return rest, tonumber(e)
    end
    local function load(kind, key)
      local t = key_type(key)
      if t == 'none' then return nil, 0 end
      if kind == 'THROTTLE' or kind == 'QUOTA' then
        if t ~= 'string' then throw(WRONGTYPE.err) end
        local s, e = unmark(kind, redis.call('GET', key))
        local tag = string.sub(s, 1, 2)
        if tag ~= TAGS[kind] and not (kind == 'THROTTLE' and tag == 'g|') then throw(WRONGTYPE.err) end
        return s, e
      elseif kind == 'SLIDE' then
        if t ~= 'list' then throw(WRONGTYPE.err) end
        local all = redis.call('LRANGE', key, 0, -1)
        if string.sub(all[1] or '', 1, 2) ~= 'S|' then throw(WRONGTYPE.err) end
        local e
        all[1], e = unmark(kind, all[1])
        return all, e
      else
        if t ~= 'hash' then throw(WRONGTYPE.err) end
        local mark = kind == 'SLICE' and 'S' or 'L'
        if redis.call('HEXISTS', key, mark) == 0 then throw(WRONGTYPE.err) end
        local flat = redis.call('HGETALL', key)
        local e = 0
        if kind == 'SLICE' then
          for i = 1, #flat, 2 do
            if flat[i] == 'S' then flat[i + 1], e = unmark(kind, flat[i + 1]) end
          end
        end
        return flat, e
      end
    end
    -- Marks the key (which holds the kind's value) blocked until `e` (µs).
    local function mark_block(kind, key, e)
      local es = string.format('%d', e)
      if kind == 'THROTTLE' or kind == 'QUOTA' then
        local v = unmark(kind, redis.call('GET', key))
        redis.call('SET', key, 'B' .. es .. '|' .. v, 'KEEPTTL')
      elseif kind == 'SLIDE' then
        local v = unmark(kind, redis.call('LINDEX', key, 0))
        redis.call('LSET', key, 0, v .. '|' .. es)
      else
        local v = unmark(kind, redis.call('HGET', key, 'S'))
        redis.call('HSET', key, 'S', v .. '|' .. es)
      end
    end

    local function expire_ms(key)
      return redis.call('PEXPIRETIME', key)
    end
    -- ms (rounded up) of an instant given as a ns offset from now
    local function unix_ms_ceil(off)
      if type(off) == 'number' then off = big(off) end
      return bnum(bdiv_ceil(badd(NOW_NS, off), 1000000))
    end
    -- Moves the key's expiry out to reset (a ns offset from now) when later;
    -- a key without one gets it when or_none. `before` is the expiry the key
    -- had before this call changed it (-1: none, -2: no key).
    local function expire_later(key, before, reset_off, or_none)
      local ms = unix_ms_ceil(reset_off)
      local later
      if before < 0 then later = or_none else later = before < ms end
      if later then
        redis.call('PEXPIREAT', key, ms)
      elseif before >= 0 then
        redis.call('PEXPIREAT', key, before)
      end
      return later
    end

    -- Decisions: {limited, limit, remaining, retry (nil: not limited, 'never',
    -- or a ns offset from now), reset (ns offset from now)}.
    local function reply_of(d, unit)
      local function after(off)
        if type(off) == 'number' then return ceil_div(off, unit) end
        return bnum(bdiv_ceil(off, unit))
      end
      local retry = -1
      if type(d.retry) ~= 'nil' and d.retry ~= 'never' then retry = after(d.retry) end
      if d.turn then retry = after(d.turn) end
      local remaining = d.remaining
      if remaining > d.limit then remaining = d.limit end
      if remaining < 0 then remaining = 0 end
      return {d.limited and 1 or 0, d.limit, remaining, retry, after(d.reset)}
    end

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

    -- RL.SLICE: counters per slice of the window, aligned to the epoch --------
    -- state: {window (µs), slices, head, counts = {[j] = n}} (nil: empty)

    local slice = {}
    local function g_index(window, slices, t_ns) -- floor(t × slices / window)
      return bnum(bdiv(bdiv(bmul(t_ns, big(slices)), 1000000), window / 1000))
    end
    local function g_start(window, slices, j) -- ceil(j × window / slices), ns
      return bdiv_ceil(bmul(bmul(big(j), big(window / 1000)), big(1000000)), slices)
    end
    function slice.parse(flat)
      local st = {counts = {}}
      for i = 1, #flat, 2 do
        local f, v = flat[i], flat[i + 1]
        if f == 'S' then
          -- window|slices|head|total|fields, or the older scripts' first three
          local w, s, h = string.match(v, '^(%d+)|(%d+)|(%d+)$')
          if w == nil then w, s, h = string.match(v, '^(%d+)|(%d+)|(%d+)|%d+|%d+$') end
          if w == nil then throw(WRONGTYPE.err) end
          st.window, st.slices, st.head = tonumber(w), tonumber(s), tonumber(h)
        else
          st.counts[tonumber(f)] = tonumber(v)
        end
      end
      if st.window == nil then throw(WRONGTYPE.err) end
      st.stored = {}
      for j, n in pairs(st.counts) do st.stored[j] = n end
      return st
    end
    local function slice_total(st)
      local t = 0
      for _, n in pairs(st.counts) do t = t + n end
      return t
    end
    local function sorted_slots(st, from, to)
      local js = {}
      for j, n in pairs(st.counts) do
        if j >= from and j <= to and n > 0 then js[#js + 1] = j end
      end
      table.sort(js)
      return js
    end
    local function rebucketed(st, P)
      local moved = function(j)
        return g_index(P.window, P.slices, bsub(g_start(st.window, st.slices, j + 1), {1}))
      end
      local head = moved(st.head)
      local oldest_held = math.max(head - P.slices, 0)
      local counts, total = {}, 0
      for _, j in ipairs(sorted_slots(st, st.head - st.slices, st.head)) do
        local at = math.max(moved(j), oldest_held)
        counts[at] = (counts[at] or 0) + st.counts[j]
        total = total + st.counts[j]
      end
      if total == 0 then return nil end
      return {window = P.window, slices = P.slices, head = head, counts = counts, stored = st.stored}
    end
    local function slice_decide_in_place(st, P, q)
      local S = P.slices
      local idx = g_index(P.window, S, NOW_NS)
      local current = idx
      if st and st.head > idx then current = st.head end
      local first_counted = math.max(current - S, 0)
      local used = 0
      if st then
        for j, n in pairs(st.counts) do if j >= first_counted and j <= st.head then used = used + n end end
      end
      local function end_of(j) return bsub(g_start(P.window, S, j + S + 1), NOW_NS) end
      local function reset_held() if used == 0 then return BZERO end return end_of(st.head) end
      local limit = P.limit
      if q <= limit and used + q <= limit then
        local d = {limited = false, limit = limit, remaining = limit - used - q}
        if q > 0 then
          d.reset = end_of(current)
          return d, {head = current, q = q}
        end
        d.reset = reset_held()
        return d
      end
      local retry
      if q > limit then retry = 'never'
      else
        local need = used + q - limit
        local freed = 0
        for _, j in ipairs(sorted_slots(st, first_counted, st.head)) do
          freed = freed + st.counts[j]
          if freed >= need then retry = end_of(j); break end
        end
        retry = retry or end_of(st.head)
      end
      return {limited = true, limit = limit, remaining = math.max(limit - used, 0), retry = retry, reset = reset_held()}
    end
    local function same_geometry(st, P) return st.window == P.window and st.slices == P.slices end
    function slice.decide(st, P, q)
      if st == nil or same_geometry(st, P) then return slice_decide_in_place(st, P, q) end
      local rebased = rebucketed(st, P)
      local d, u = slice_decide_in_place(rebased, P, q)
      if u then u.rebased = rebased or false end
      return d, u
    end
    local function advance(st, head)
      if head <= st.head then return end
      st.head = head
      for j in pairs(st.counts) do
        if j < head - st.slices then st.counts[j] = nil end
      end
    end
    function slice.apply(st, u, P)
      if u.rebased ~= nil then st = u.rebased or nil
      elseif st and not same_geometry(st, P) then st = rebucketed(st, P) end
      if st == nil then
        st = {window = P.window, slices = P.slices, head = u.head, counts = {}}
      end
      advance(st, u.head)
      st.counts[st.head] = (st.counts[st.head] or 0) + u.q
      return st
    end
    -- RL.CHARGE: the current slice takes `q` units as an allowed request
    -- would, whatever the limit (the decision under the largest limit, which
    -- allows it exactly when the counters can hold it); refused, nothing
    -- recorded, past 2^32 - 1 units held.
    function slice.charge(st, P, q)
      local open = {}
      for k, v in pairs(P) do open[k] = v end
      open.limit = 4294967295
      local d, u = slice.decide(st, open, q)
      if d.limited or u == nil then throw('ERR quantity would take the units a SLICE key holds past 4294967295') end
      return slice.apply(st, u, open)
    end
    function slice.refund(st, P, q)
      if not same_geometry(st, P) then
        st = rebucketed(st, P)
        if st == nil then return nil end
      end
      local left = q
      local newest_kept = nil
      local first_held = math.max(st.head - st.slices, 0)
      local j = st.head
      while true do
        local n = st.counts[j]
        if n then
          local taken = math.min(n, left)
          st.counts[j] = n - taken
          if st.counts[j] == 0 then st.counts[j] = nil end
          left = left - taken
          if st.counts[j] and newest_kept == nil then newest_kept = j end
        end
        if (left == 0 and newest_kept ~= nil) or j == first_held then break end
        j = j - 1
      end
      if newest_kept ~= nil and slice_total(st) > 0 then
        st.head = newest_kept
        return st
      end
      return nil
    end
    function slice.inspect(st)
      local counts = {}
      for j = st.head, st.head - st.slices, -1 do counts[#counts + 1] = (j >= 0 and st.counts[j]) or 0 end
      local age = bsub(NOW_NS, g_start(st.window, st.slices, st.head))
      return {'window_ms', st.window / 1000, 'slices', st.slices, 'units', slice_total(st),
        'head_age_ms', bnum(bdiv_ceil(age, 1000000)), 'counts', counts}
    end
    function slice.store(key, st)
      -- total: the units of slices head - slices to head; fields: the slices
      -- stored (the fast path reads these instead of the whole key)
      local total, fields = 0, 0
      for j, n in pairs(st.counts) do
        fields = fields + 1
        if j >= st.head - st.slices and j <= st.head then total = total + n end
      end
      local header = numstr(st.window) .. '|' .. numstr(st.slices) .. '|' .. numstr(st.head) .. '|' .. numstr(total)
        .. '|' .. numstr(fields)
      local stored = st.stored or {}
      local dels = {}
      for j in pairs(stored) do
        if st.counts[j] == nil then dels[#dels + 1] = numstr(j) end
      end
      call_chunked('HDEL', key, dels, 1000)
      local sets = {}
      for j, n in pairs(st.counts) do
        if stored[j] ~= n then sets[#sets + 1] = numstr(j); sets[#sets + 1] = numstr(n) end
      end
      call_chunked('HSET', key, sets, 1000, {'S', header})
    end

    -- RL.LEASE: named leases, expiries in µs ----------------------------------
    -- state: {[id] = {exp, weight}} ; the hash holds 'L', 'H' (units|earliest|latest
    -- expiry of the stored leases) and '#'..id fields

    local lease = {}
    function lease.parse(flat)
      local st = {}
      for i = 1, #flat, 2 do
        local f, v = flat[i], flat[i + 1]
        if string.sub(f, 1, 1) == '#' then
          local e, w = string.match(v, '^(%d+)|(%d+)$')
          if e == nil then throw(WRONGTYPE.err) end
          st[string.sub(f, 2)] = {tonumber(e), tonumber(w)}
        end
      end
      return st
    end
    local function bytes_less(a, b)
      local n = math.min(#a, #b)
      for i = 1, n do
        local x, y = string.byte(a, i), string.byte(b, i)
        if x ~= y then return x < y end
      end
      return #a < #b
    end
    local function lease_order(st) -- {id, exp, weight} by (expiry, id)
      local list = {}
      for id, l in pairs(st) do list[#list + 1] = {id, l[1], l[2]} end
      table.sort(list, function(a, b)
        if a[2] ~= b[2] then return a[2] < b[2] end
        return bytes_less(a[1], b[1])
      end)
      return list
    end
    function lease.decide(st, P, q, id)
      st = st or {}
      local limit = P.limit
      local named = id ~= nil and #id >= 1 and #id <= 128
      local own = named and st[id] and st[id][1] > NOW and st[id] or nil
      local own_w = own and own[2] or 0
      local held, latest, expired_w = 0, nil, 0
      for _, l in pairs(st) do
        if l[1] > NOW then held = held + l[2] else expired_w = expired_w + l[2] end
        if latest == nil or l[1] > latest then latest = l[1] end
      end
      local others = held - own_w
      local function latest_now(x) if x == nil or x < NOW then return NOW end return x end
      local d = {limited = true, limit = limit, remaining = math.max(limit - held, 0), retry = 'never',
        reset = off_us(latest_now(latest))}
      if q > limit then return d end
      if others + q > limit then
        local need = others + q - limit
        local order = lease_order(st)
        local function first_reaching(target)
          local passed = 0
          for i, l in ipairs(order) do
            passed = passed + l[3]
            if passed >= target then return i end
          end
          return nil
        end
        local target = expired_w + need
        local at = first_reaching(target)
        if own and at then
          local o = order[at]
          -- own at or before `at` in (expiry, id) order
          local own_first = own[1] < o[2] or (own[1] == o[2] and not bytes_less(o[1], id))
          if own_first then at = first_reaching(target + own_w) end
        end
        if at == nil then d.retry = off_us(latest_now(latest)) else d.retry = off_us(order[at][2]) end
        return d
      end
      d.limited = false
      d.retry = nil
      if q == 0 then return d end
      local expiry = NOW + P.ttl
      d.remaining = limit - (others + q)
      local latest_others = NOW
      for lid, l in pairs(st) do
        if not (own and lid == id) and l[1] > latest_others then latest_others = l[1] end
      end
      d.reset = off_us(math.max(expiry, latest_others))
      if not named then return d end
      return d, {id = id, expiry = expiry, weight = q}
    end
    function lease.apply(st, u)
      local out = {}
      for id, l in pairs(st or {}) do if l[1] > NOW then out[id] = l end end
      out[u.id] = {u.expiry, u.weight}
      return out
    end
    function lease.inspect(st)
      local held, count = 0, 0
      local holders = {}
      for _, l in ipairs(lease_order(st)) do
        if l[2] > NOW then
          held = held + l[3]
          count = count + 1
          if #holders < 100 then
            holders[#holders + 1] = {l[1], l[3], bnum(bdiv_ceil(big(l[2] - NOW), 1000))}
          end
        end
      end
      return {'held', held, 'leases', count, 'holders', holders}
    end
    -- Writes the leases: every field of the hash that changed.
    function lease.store(key, st, old)
      old = old or {}
      local dels = {}
      for id in pairs(old) do if st[id] == nil then dels[#dels + 1] = '#' .. id end end
      call_chunked('HDEL', key, dels, 1000)
      local sets = {}
      for id, l in pairs(st) do
        local o = old[id]
        if o == nil or o[1] ~= l[1] or o[2] ~= l[2] then
          sets[#sets + 1] = '#' .. id
          sets[#sets + 1] = numstr(l[1]) .. '|' .. numstr(l[2])
        end
      end
      -- Field H: the units of every stored lease, the earliest and the latest
      -- expiry (fast/lease.lua decides from it while none has expired).
      local held, lo, hi = 0, nil, nil
      for _, l in pairs(st) do
        held = held + l[2]
        if lo == nil or l[1] < lo then lo = l[1] end
        if hi == nil or l[1] > hi then hi = l[1] end
      end
      if lo == nil then
        redis.call('HDEL', key, 'H')
      else
        sets[#sets + 1] = 'H'
        sets[#sets + 1] = numstr(held) .. '|' .. numstr(lo) .. '|' .. numstr(hi)
      end
      call_chunked('HSET', key, sets, 1000, {'L', '1'})
    end

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
    local ALGO = {THROTTLE = throttle, SLIDE = slide, SLICE = slice, LEASE = lease, QUOTA = quota}

    -- The commands -------------------------------------------------------------

    local function run(f)
      local ok, res = pcall(f)
      if ok then return res end
      if type(res) == 'table' and res.e then return redis.error_reply(res.e) end
      error(res, 0)
    end

    local function parse_state(algo, raw) if raw == nil then return nil end return algo.parse(raw) end
    local function copy_leases(st)
      local out = {}
      for id, l in pairs(st or {}) do out[id] = {l[1], l[2]} end
      return out
    end
    local function store_state(algo, key, new, old, before)
      if algo == lease then lease.store(key, new, old) else algo.store(key, new, before) end
    end

    local function tobig(x) if type(x) == 'number' then return big(x) end return x end
    -- BLOCK: the decision on a key blocked until `e` (µs, after now), as the
    -- module's (src/core/block.rs): limited, remaining 0, nothing recorded;
    -- retry the later of the block's end and the limiter's own (a request of
    -- q >= 1 that can never fit: never; an allowed one, or a peek that could
    -- never fit: the block's end); reset never before the block's end.
    local function held_by_block(d, e, q)
      local off = off_us(e)
      local retry
      if d.retry == 'never' and q > 0 then retry = 'never'
      elseif d.retry == nil or d.retry == 'never' then retry = off
      else retry = bmax(tobig(d.retry), off) end
      return {limited = true, limit = d.limit, remaining = 0, retry = retry, reset = bmax(tobig(d.reset), off)}
    end
    -- A decision with the key's block (`bl`, µs; 0 none) and the limit's
    -- BLOCK: on a blocked key, held; a refusal of q >= 1 that can fit, by a
    -- limit with BLOCK, starts a block until now + b (returned) and answers
    -- as held. Else the kind's own decision and update. On a blocked key a
    -- decision that would allow is replaced by `peek()`'s (the kind's answer
    -- for 0 units): the request records nothing, so its reset must not count
    -- the units it would have taken (src/core/block.rs's `decide_from`).
    local function with_block(d, u, bl, P, q, peek)
      if bl > NOW then
        if not d.limited and peek then d = peek() end
        return held_by_block(d, bl, q), nil, nil
      end
      if d.limited and q > 0 and d.retry ~= 'never' and P.block then
        local e = NOW + P.block
        return held_by_block(d, e, q), nil, e
      end
      return d, u, nil
    end

    -- RL.<NAME> key <params> [lease_id] [quantity] [MS] [options]
    local function limiter(name)
      return run(function()
        local kind = KINDS[name]
        local algo = ALGO[name]
        local n = #kind.params
        local quantity_at = n + (kind.takes_id and 1 or 0)
        if NARGS < 1 + quantity_at then throw(err_arity('RL.' .. name).err) end
        if NARGS + 1 > 14 then throw("ERR unknown argument '" .. printable(arg(14)) .. "'") end
        local words = {}
        for i = 2, NARGS do words[#words + 1] = arg(i) end
        local params = {}
        for i = 1, n do params[i] = words[i] end
        local id = nil
        if kind.takes_id then id = lease_id(words[n + 1]) end
        local tail = {unit = S_NS}
        local q = 1
        local options = {}
        local wait_word
        local i = quantity_at + 1
        while words[i] ~= nil do
          local word = words[i]
          if ms_or_at(words, i, tail) then
          elseif upper(word) == 'MAXWAIT' then
            if name ~= 'THROTTLE' then throw('ERR MAXWAIT takes THROTTLE limits only') end
            if wait_word then throw('ERR MAXWAIT is given more than once') end
            i = i + 1
            wait_word = words[i] or ''
          else
            local o = option_index(kind, word)
            if name == 'LEASE' and upper(word) == 'BLOCK' then throw('ERR LEASE takes no BLOCK') end
            if o then
              i = i + 1
              if words[i] == nil then throw(value_error(kind.options[o], tail.unit)) end
              if options[o] ~= nil then throw('ERR ' .. kind.options[o][1] .. ' is given more than once') end
              options[o] = words[i]
            elseif i == quantity_at + 1 and string.find(word, '^[%d%-]') then
              q = integer(word, 'quantity', 0, MAX_QUANTITY)
            else
              throw("ERR unknown argument '" .. printable(word) .. "'")
            end
          end
          i = i + 1
        end
        local P = read_params(kind, params, options, tail.unit)
        local wait = wait_word and max_wait(wait_word, tail.unit)
        read_clock()
        local key = KEYS[1]
        local raw, bl = load(name, key)
        local st = parse_state(algo, raw)
        local old = name == 'LEASE' and copy_leases(st) or nil
        local before = expire_ms(key)
        local d, u = algo.decide(st, P, q, id)
        if wait and bl <= NOW then
          -- MAXWAIT: granted for its turn when that comes within the wait.
          local own = throttle.turn(st, P, q)
          if own and bcmp(own, wait) <= 0 then d, u = throttle.book(st, P, own, q) end
        end
        local starts
        d, u, starts = with_block(d, u, bl, P, q, function() return (algo.decide(st, P, 0, id)) end)
        if u then
          local new = algo.apply(st, u, P)
          store_state(algo, key, new, old, before)
          expire_later(key, before, d.reset, true)
        elseif d.limited and q > 0 and raw ~= nil then
          if starts then mark_block(name, key, starts) end
          expire_later(key, before, d.reset, false)
        end
        return reply_of(d, tail.unit)
      end)
    end

    -- RL.RELEASE key lease_id
    local function release()
      return run(function()
        local argc = NARGS + 1
        if argc == 5 then
          if upper(arg(3)) == 'AT' then throw("ERR AT is accepted only from the master or the AOF: it carries the master's clock") end
          throw("ERR unknown argument '" .. printable(arg(3)) .. "'")
        elseif argc ~= 3 then
          throw(err_arity('RL.RELEASE').err)
        end
        local id = lease_id(arg(2))
        read_clock()
        local key = KEYS[1]
        local raw = load('LEASE', key)
        if raw == nil then return 0 end
        local st = lease.parse(raw)
        if not (st[id] and st[id][1] > NOW) then return 0 end
        local old = copy_leases(st)
        local new = {}
        local left = 0
        for lid, l in pairs(st) do
          if l[1] > NOW and lid ~= id then new[lid] = l; left = left + 1 end
        end
        if left == 0 then
          redis.call('DEL', key)
        else
          -- H goes too: the next call that writes makes it again from every lease.
          local dels = {'H'}
          for lid in pairs(old) do if new[lid] == nil then dels[#dels + 1] = '#' .. lid end end
          call_chunked('HDEL', key, dels, 1000)
        end
        return 1
      end)
    end

    -- What a key of this backend holds: its kind and parsed state; nil when missing.
    -- What a key of this backend holds: its kind, parsed state and block end
    -- (µs, 0 none); nil when missing.
    local function held(key)
      local t = key_type(key)
      if t == 'none' then return nil end
      local name
      if t == 'string' then
        local tag = string.sub(unmark('THROTTLE', redis.call('GET', key)), 1, 2)
        if tag == 'G|' or tag == 'g|' then name = 'THROTTLE' elseif tag == 'Q|' then name = 'QUOTA' end
      elseif t == 'list' then
        if string.sub(redis.call('LINDEX', key, 0) or '', 1, 2) == 'S|' then name = 'SLIDE' end
      elseif t == 'hash' then
        if redis.call('HEXISTS', key, 'S') == 1 then name = 'SLICE'
        elseif redis.call('HEXISTS', key, 'L') == 1 then name = 'LEASE' end
      end
      if name == nil then throw(WRONGTYPE.err) end
      local raw, bl = load(name, key)
      return name, ALGO[name].parse(raw), bl
    end

    -- RL.INSPECT key
    local function inspect()
      return run(function()
        if NARGS ~= 1 then throw(err_arity('RL.INSPECT').err) end
        read_clock()
        local key = KEYS[1]
        local name, st, bl = held(key)
        if name == nil then return false end
        local at = expire_ms(key)
        local ttl = -1
        if at >= 0 then ttl = math.max(at - bnum(bdiv_ceil(big(NOW), 1000)), 0) end
        local memory = redis.pcall('MEMORY', 'USAGE', key)
        if type(memory) ~= 'number' then memory = -1 end
        local out = {{ok = 'type'}, string.lower(name), {ok = 'ttl'}, ttl, {ok = 'memory'}, memory}
        local fields = ALGO[name].inspect(st)
        for i = 1, #fields, 2 do
          out[#out + 1] = {ok = fields[i]}
          out[#out + 1] = fields[i + 1]
        end
        if bl > NOW then
          out[#out + 1] = {ok = 'blocked_until'}
          out[#out + 1] = ceil_div(bl, 1000)
        end
        return out
      end)
    end

    -- RL.REFUND and RL.CHARGE key spec quantity [MS]: one flow, the
    -- operation a parameter (`charge`), as the module's. A refund gives units
    -- back and never creates a key; a charge records them unconditionally
    -- (creating the key), refused only past a counter's maximum, with nothing
    -- recorded. Both answer what a peek answers right after; a key left with
    -- nothing counted is deleted.
    local function adjust(charge)
      local cmd = charge and 'RL.CHARGE' or 'RL.REFUND'
      return run(function()
        if NARGS + 1 < 6 then throw(err_arity(cmd).err) end
        if NARGS + 1 > 15 then throw("ERR unknown argument '" .. printable(arg(15)) .. "'") end
        local words = {}
        for i = 2, NARGS do words[#words + 1] = arg(i) end
        local kind, params, options, nxt = find_spec(words, 1, 0, true)
        if kind.no_refund then throw('ERR ' .. cmd .. ' does not take a ' .. kind.name .. ' spec') end
        -- A several-limit spec's own options, and BLOCK, are none of this
        -- command's.
        local w = words[nxt] and upper(words[nxt])
        if w == 'UNITS' or w == 'SHADOW' or w == 'BLOCK' then throw("ERR unknown argument '" .. printable(words[nxt]) .. "'") end
        if nxt > #words then throw('ERR ' .. kind.name .. ' expects ' .. expects(kind) .. ' quantity') end
        local q = integer(words[nxt], 'quantity', charge and 1 or 0, MAX_QUANTITY)
        local tail = {unit = S_NS}
        for i = nxt + 1, #words do
          if not ms_or_at(words, i, tail) then throw("ERR unknown argument '" .. printable(words[i]) .. "'") end
        end
        local P = read_params(kind, params, options, tail.unit)
        read_clock()
        local key = KEYS[1]
        local algo = ALGO[kind.name]
        local raw, bl = load(kind.name, key)
        local st = parse_state(algo, raw)
        -- What a peek answers, the key's block included (neither lifts it).
        local function peek(s) return (with_block(algo.decide(s, P, 0), nil, bl, P, 0)) end
        if not charge then
          if raw == nil or q == 0 then return reply_of(peek(st), tail.unit) end
        end
        local before = expire_ms(key)
        local kept = st
        if charge then st = algo.charge(st, P, q) else st = algo.refund(st, P, q) end
        if st == nil and bl > NOW then
          -- A SLICE refund that empties a blocked key: it keeps the block.
          st = {window = P.window, slices = P.slices, head = kept.head, counts = {}, stored = kept.stored}
        end
        local d = peek(st)
        if d.reset == 0 or (type(d.reset) == 'table' and biszero(d.reset)) then
          redis.call('DEL', key)
        else
          algo.store(key, st, before)
          if bl > NOW then mark_block(kind.name, key, bl) end
          expire_later(key, before, d.reset, true)
        end
        return reply_of(d, tail.unit)
      end)
    end

    local function retry_rank(r)
      if r == nil then return 0, BZERO end
      if r == 'never' then return 2, BZERO end
      if type(r) == 'number' then return 1, big(r) end
      return 1, r
    end
    -- The binding limit among the enforced ones (`enforced[i]`; SHADOW limits
    -- never bind): when one refuses, the refusing one with the largest retry
    -- (never largest); else the longest wait for its turn (MAXWAIT), then the
    -- least remaining, then the larger reset; then the lower index.
    local function binding(ds, enforced)
      local any = false
      for i, d in ipairs(ds) do if d.limited and enforced[i] then any = true end end
      local best = nil
      for i, d in ipairs(ds) do
        if enforced[i] and not (any and not d.limited) then
          local better
          if best == nil then better = true
          elseif any then
            local a, x = retry_rank(d.retry)
            local b, y = retry_rank(ds[best].retry)
            better = a > b or (a == b and bcmp(x, y) > 0)
          else
            local b = ds[best]
            local c = bcmp(d.turn or BZERO, b.turn or BZERO)
            better = c > 0 or (c == 0 and (d.remaining < b.remaining
              or (d.remaining == b.remaining and bcmp(tobig(d.reset), tobig(b.reset)) > 0)))
          end
          if better then best = i end
        end
      end
      return best
    end

    -- RL.ALLOW / RL.PEEK numkeys key [key ...] spec [spec ...] [QUANTITY q] [MS]
    -- [MAXWAIT w] [ID id], each spec with its own [UNITS n] [SHADOW]
    local function several(write)
      local cmd = write and 'RL.ALLOW' or 'RL.PEEK'
      return run(function()
        if NARGS + 1 < 6 then throw(err_arity(cmd).err) end
        if NARGS + 1 > 187 then throw("ERR unknown argument '" .. printable(arg(187)) .. "'") end
        local words = {}
        for i = 1, NARGS do words[i] = arg(i) end
        local count = integer(words[1], 'numkeys', 1, 16)
        if #words < 1 + count then throw('ERR spec 1 is missing: ' .. count .. ' keys need ' .. count .. ' specs') end
        for i = 2, count do
          for j = 1, i - 1 do
            if words[1 + i] == words[1 + j] then throw("ERR key '" .. printable(words[1 + i]) .. "' is given more than once") end
          end
        end
        local found = {}
        local at = count + 2
        for index = 1, count do
          if at > #words then throw('ERR spec ' .. index .. ' is missing: ' .. count .. ' keys need ' .. count .. ' specs') end
          local kind, params, options, nxt, limit = find_spec(words, at, index)
          found[index] = {kind, params, options, limit}
          at = nxt
        end
        local tail = {unit = S_NS}
        local q, q_given, id, wait_word = 1, false, nil, nil
        local i = at
        while words[i] ~= nil do
          local w = upper(words[i])
          if ms_or_at(words, i, tail) then
          elseif w == 'MAXWAIT' then
            if wait_word then throw('ERR MAXWAIT is given more than once') end
            i = i + 1
            wait_word = words[i] or ''
          elseif w == 'QUANTITY' then
            if q_given then throw('ERR QUANTITY is given more than once') end
            q_given = true
            i = i + 1
            q = integer(words[i], 'QUANTITY', 0, MAX_QUANTITY)
          elseif w == 'ID' then
            if id ~= nil then throw('ERR ID is given more than once') end
            i = i + 1
            id = lease_id(words[i])
          else
            throw("ERR unknown argument '" .. printable(words[i]) .. "'")
          end
          i = i + 1
        end
        local wait = wait_word and max_wait(wait_word, tail.unit)
        local specs = {}
        for index, f in ipairs(found) do
          local ok, res = pcall(read_params, f[1], f[2], f[3], tail.unit)
          if not ok then
            if type(res) == 'table' and res.e then
              throw('ERR spec ' .. index .. ' (' .. f[1].name .. '): ' .. string.sub(res.e, 5))
            end
            error(res, 0)
          end
          specs[index] = res
        end
        if wait then
          for index, f in ipairs(found) do
            if f[1].name ~= 'THROTTLE' then throw('ERR MAXWAIT takes THROTTLE limits only: spec ' .. index .. ' is ' .. f[1].name) end
          end
        end
        local enforced, all_shadow = {}, true
        for index, f in ipairs(found) do
          enforced[index] = not f[4].shadow
          if enforced[index] then all_shadow = false end
        end
        if all_shadow then throw('ERR at least one spec must be enforced: every spec is SHADOW') end
        local needs = nil
        for _, f in ipairs(found) do if f[1].takes_id then needs = f[1].name; break end end
        if needs and id == nil and write then throw('ERR a ' .. needs .. ' spec needs the ID option: ID lease_id') end
        if needs == nil and id ~= nil then throw('ERR ID is given but no spec takes it') end

        read_clock()
        -- Each limit's units: its own (UNITS), else the call's quantity.
        local qs, takes = {}, false
        for index, f in ipairs(found) do
          qs[index] = f[4].units or q
          if write and qs[index] > 0 then takes = true end
        end
        local limits, ds = {}, {}
        for index, P in ipairs(specs) do
          local key = KEYS[index]
          local algo = ALGO[P.kind]
          local raw, bl = load(P.kind, key)
          limits[index] = {key = key, algo = algo, raw = raw, bl = bl, st = parse_state(algo, raw), P = P}
        end
        -- MAXWAIT: the call goes at the latest turn of its enforced limits,
        -- when each comes within the wait; every limit that fits by then is
        -- booked at that turn. A refused call shows each limit that fits
        -- within the wait booked at its own turn (src/core/wait.rs).
        local bookings = {}
        if wait then
          local turns, call = {}, BZERO
          for index, l in ipairs(limits) do
            local t = throttle.turn(l.st, l.P, qs[index])
            if t and bcmp(t, wait) > 0 then t = nil end
            turns[index] = t or false -- (false: never within the wait; ipairs goes on)
            if enforced[index] and call then
              if not t then call = nil elseif bcmp(t, call) > 0 then call = t end
            end
          end
          for index, own in ipairs(turns) do
            if own then
              if call == nil then bookings[index] = own
              elseif bcmp(own, call) <= 0 then bookings[index] = call end
            end
          end
        end
        for index, l in ipairs(limits) do
          local d, u = l.algo.decide(l.st, l.P, qs[index], id)
          if bookings[index] and l.bl <= NOW then d, u = throttle.book(l.st, l.P, bookings[index], qs[index]) end
          d, l.u, l.starts = with_block(d, u, l.bl, l.P, qs[index], function() return (l.algo.decide(l.st, l.P, 0, id)) end)
          l.old = l.P.kind == 'LEASE' and copy_leases(l.st) or nil
          ds[index] = d
        end
        local allowed = true
        for index, d in ipairs(ds) do if d.limited and enforced[index] then allowed = false end end
        if takes then
          for index, l in ipairs(limits) do
            local before = expire_ms(l.key)
            if allowed and not ds[index].limited then
              if l.u then
                store_state(l.algo, l.key, l.algo.apply(l.st, l.u, l.P), l.old, before)
                expire_later(l.key, before, ds[index].reset, true)
              end
            elseif qs[index] > 0 then
              if l.starts then
                mark_block(l.P.kind, l.key, l.starts)
                expire_later(l.key, before, ds[index].reset, false)
              elseif l.raw ~= nil then
                local d0 = l.algo.decide(parse_state(l.algo, l.raw), l.P, 0, nil)
                expire_later(l.key, before, d0.reset, false)
              end
            end
          end
        end
        local fives = {}
        for index, d in ipairs(ds) do fives[index] = reply_of(d, tail.unit) end
        local b = binding(ds, enforced)
        local out = {}
        for k = 1, 5 do out[k] = fives[b][k] end
        out[6] = b
        out[7] = fives
        return out
      end)
    end
    return {limiter = limiter, release = release, inspect = inspect, refund = adjust, charge = adjust, several = several}
  end
  return lib()[entry](arg)
end
