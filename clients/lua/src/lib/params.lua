local function read_params(kind, words, options, unit)
  local v = {}
  for i, p in ipairs(kind.params) do
    local w = words[i]
    if p[2] == 'int' then
      v[i] = parse_int(w, p[3], p[4])
    elseif p[2] == 'dur' then
      v[i] = parse_int(w, 1, max_time(unit))
    elseif p[2] == 'word' then
      for j, u in ipairs(UNITS) do if w ~= nil and upper(w) == u then v[i] = j end end
    end
    if v[i] == nil then throw(value_error(p, unit)) end
  end
  local opt = {}
  for i, o in ipairs(kind.options) do
    local w = options[i]
    if w ~= nil then
      if o[2] == 'dur0' or o[2] == 'dur' then
        opt[i] = parse_int(w, o[2] == 'dur' and 1 or 0, max_time(unit))
        if opt[i] == nil then throw(value_error(o, unit)) end
      else
        if #w < 1 or #w > 64 then throw(value_error(o, unit)) end
        opt[i] = w
      end
    end
  end
  local us_per = unit / 1000 -- microseconds per unit
  local P = {kind = kind.name, unit = unit}
  for i, o in ipairs(kind.options) do
    if o.block and opt[i] then P.block = opt[i] * us_per end
  end
  if kind.name == 'THROTTLE' then
    P.cap = v[1] + 1
    P.count = v[2]
    P.p = v[3]
    P.period = bmul(big(v[3]), big(unit)) -- ns
    -- (max_burst + 1) x period <= 100 years x count, in ns
    local tol = bmul(big(P.cap), P.period)
    if bcmp(tol, bmul(big(3153600000000000000 / 1000), bmul(big(1000), big(P.count)))) > 0 then
      throw('ERR (max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)')
    end
    P.tolerance = tol
  elseif kind.name == 'SLIDE' then
    P.limit = v[1]
    P.window = v[2] * us_per -- µs
    local d = opt[1] or 0
    if d > v[2] then throw('ERR PRECISION must be at most the window') end
    P.precision = d * us_per
  elseif kind.name == 'SLICE' then
    P.limit = v[1]
    P.window = v[2] * us_per
    P.slices = v[3]
    -- The Lua backend keeps slice indexes as doubles: a slice of at least
    -- 256 ns keeps them below 2^53 until the year 2500.
    if P.window * 1000 < P.slices * 256 then
      throw('ERR the Lua backend needs window / slices of at least 256 ns (the module takes down to 1 ns)')
    end
  elseif kind.name == 'LEASE' then
    P.limit = v[1]
    P.ttl = v[2] * us_per
  elseif kind.name == 'QUOTA' then
    P.limit = v[1]
    P.unit_index = v[2]
    P.zone = read_zone(opt[1])
  end
  return P
end

-- Reads `MS` or `AT` at words[i]; true when it was one of them.
local function ms_or_at(words, i, tail)
  local w = upper(words[i])
  if w == 'MS' then
    if tail.unit == MS_NS then throw('ERR MS is given more than once') end
    tail.unit = MS_NS
    return true
  elseif w == 'AT' then
    throw("ERR AT is accepted only from the master or the AOF: it carries the master's clock")
  end
  return false
end

-- Finds the spec starting at words[at]: kind, parameter words, options,
-- next, and (in a several-limit call, index > 0) its own options, any
-- order with the kind's: {units = n, shadow = true}. `no_block`: RL.REFUND
-- and RL.CHARGE, whose specs take no BLOCK (the word is then not an
-- option).
local function find_spec(words, at, index, no_block)
  local word = words[at]
  local kind = word and KINDS[upper(word)]
  if kind == nil then
    local prefix = index == 0 and '' or ('spec ' .. index .. ': ')
    throw('ERR ' .. prefix .. "unknown algorithm '" .. printable(word or '') .. "' (expected " .. KIND_WORDS .. ')')
  end
  local n = #kind.params
  if at + n > #words then
    if index == 0 then throw('ERR ' .. kind.name .. ' expects ' .. expects(kind)) end
    throw('ERR spec ' .. index .. ' (' .. kind.name .. '): expects ' .. expects(kind))
  end
  local params = {}
  for i = 1, n do params[i] = words[at + i] end
  local options = {}
  local limit = {}
  local nxt = at + 1 + n
  local function spec_err(text)
    if index == 0 then throw(text) end
    throw('ERR spec ' .. index .. ' (' .. kind.name .. '): ' .. string.sub(text, 5))
  end
  while true do
    local w = words[nxt] and upper(words[nxt])
    local o = option_index(kind, w)
    if kind.name == 'LEASE' and not no_block and w == 'BLOCK' then spec_err('ERR LEASE takes no BLOCK') end
    if o and not (no_block and kind.options[o].block) then
      local value = words[nxt + 1]
      if value == nil then spec_err(value_error(kind.options[o], S_NS)) end
      if options[o] ~= nil then spec_err('ERR ' .. kind.options[o][1] .. ' is given more than once') end
      options[o] = value
      nxt = nxt + 2
    elseif index > 0 and w == 'UNITS' then
      if limit.units then spec_err('ERR UNITS is given more than once') end
      limit.units = parse_int(words[nxt + 1], 0, MAX_QUANTITY)
      if limit.units == nil then spec_err(range_error('UNITS', 0, MAX_QUANTITY, nil)) end
      nxt = nxt + 2
    elseif index > 0 and w == 'SHADOW' then
      if limit.shadow then spec_err('ERR SHADOW is given more than once') end
      limit.shadow = true
      nxt = nxt + 1
    else
      break
    end
  end
  if limit.shadow then
    for i, o in ipairs(kind.options) do
      if o.block and options[i] ~= nil then spec_err('ERR SHADOW takes no BLOCK') end
    end
  end
  return kind, params, options, nxt, limit
end
