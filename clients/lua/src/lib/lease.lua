-- RL.LEASE: named leases, expiries in µs ----------------------------------
-- state: {[id] = {exp, weight}} ; the hash holds 'L' and '#'..id fields

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
  call_chunked('HSET', key, sets, 1000, {'L', '1'})
end

