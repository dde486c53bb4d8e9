
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

