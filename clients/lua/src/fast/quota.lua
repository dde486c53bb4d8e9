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
