
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
