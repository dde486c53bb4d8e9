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
    local h = redis.pcall('HGETALL', key)
    local own, marked = '#' .. id, false
    local held, own_w, latest, others_latest = 0, 0, now, now
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
            if f == own then own_w = lw elseif e > others_latest then others_latest = e end
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
    local expiry = now + ttl * us_per
    local x = expiry > others_latest and expiry or others_latest
    local function put(key, fresh, own, expiry, q, dead, ms)
      local v = string.format('%d|%d', expiry, q)
      if fresh then
        redis.call('HSET', key, 'L', '1', own, v)
        redis.call('PEXPIREAT', key, string.format('%d', ms))
        return
      end
      redis.call('HSET', key, own, v)
      if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
      -- Later only; a key without an expiry gets one.
      local at = string.format('%d', ms)
      if redis.call('PEXPIREAT', key, at, 'GT') == 0 and redis.call('PEXPIRETIME', key) == -1 then
        redis.call('PEXPIREAT', key, at)
      end
    end
    local five, ms = {0, limit, limit - (held - own_w) - q, -1, ceil_div(x - now, us_per)}, ceil_div(x, 1000)
    if commit then put(key, #h == 0, own, expiry, q, dead, ms) return five end
    return five, x - now, 0, put, key, #h == 0, own, expiry, q, dead, ms
  end
  return nil
end

