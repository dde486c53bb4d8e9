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

