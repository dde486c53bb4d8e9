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
