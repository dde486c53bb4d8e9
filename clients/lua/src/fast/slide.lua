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
