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
    if w and w ~= 'MS' and w ~= 'ms' and w ~= 'PRECISION' and w ~= 'precision' and w ~= 'BLOCK' and w ~= 'block' then
      qs = w; i = i + 1
    end
    local ok, ms_seen, p_seen, bs = true, false, false, nil
    while ok and A[i] do
      w = A[i]
      if (w == 'MS' or w == 'ms') and not ms_seen then ms_seen = true; us_per = 1000; i = i + 1
      elseif name == 'SLIDE' and (w == 'PRECISION' or w == 'precision') and not p_seen and A[i + 1] then
        p_seen = true; third = A[i + 1]; i = i + 2
      elseif name ~= 'LEASE' and (w == 'BLOCK' or w == 'block') and not bs and A[i + 1] then
        bs = A[i + 1]; i = i + 2
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
      local d = keep(fast(name, KEYS[1], A[o + 1], A[o + 2], third, qs, us_per, t, gcra, ceil_div, false))
      if d[1] and d[1][1] == 0 then
        if d[4] then d[4](unpack(d, 5, d.n)) end
        return d[1]
      end
    elseif t then
      -- The decision, its writes made; its reply (nil: the full code's).
      local five = fast(name, KEYS[1], A[o + 1], A[o + 2], third, qs, us_per, t, gcra, ceil_div, true)
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

