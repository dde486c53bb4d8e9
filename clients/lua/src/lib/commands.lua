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
