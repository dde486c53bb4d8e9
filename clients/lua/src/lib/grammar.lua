
-- A command with many arguments, sent in chunks that unpack can take
-- (`per` arguments at a time, a multiple of the arguments' group size).
local function call_chunked(cmd, key, args, per, head)
  local i = 1
  if head then
    local first = {}
    for j = 1, #head do first[#first + 1] = head[j] end
    for j = 1, math.min(per, #args) do first[#first + 1] = args[j] end
    redis.call(cmd, key, unpack(first))
    i = per + 1
  end
  while i <= #args do
    redis.call(cmd, key, unpack(args, i, math.min(i + per - 1, #args)))
    i = i + per
  end
end

-- Errors -------------------------------------------------------------------

local function fail(text) return {err = text} end
local function err_arity(name)
  return fail("ERR wrong number of arguments for '" .. name .. "' command")
end
local WRONGTYPE = {err = 'WRONGTYPE Operation against a key holding the wrong kind of value'}

-- An argument as the module shows it in errors: printable ASCII, 32 at most.
local function printable(s)
  local out = {}
  for i = 1, math.min(#s, 32) do
    local b = string.byte(s, i)
    if b >= 33 and b <= 126 then out[#out + 1] = string.char(b) else out[#out + 1] = '?' end
  end
  local text = table.concat(out)
  if #s > 32 then text = text .. '...' end
  return text
end

-- Errors are thrown as tables {e = text} and turned into replies at the top.
local function throw(text) error({e = text}, 0) end

local MAX_QUANTITY = 1000000000000
local MAX_SECONDS = 315360000
local S_NS, MS_NS = 1000000000, 1000000

-- A decimal integer with nothing around it (leading zeros allowed) in
-- min..max; nil otherwise. Every max here is below 10^16.
local function parse_int(s, min, max)
  if s == nil or not string.find(s, '^%d+$') then return nil end
  local digits = string.gsub(s, '^0+', '')
  if #digits > 16 then return nil end
  local n = tonumber(digits == '' and '0' or digits)
  if n < min or n > max then return nil end
  return n
end
local function range_error(name, min, max, unit)
  local suffix = ''
  if unit == S_NS then suffix = ' (seconds)' elseif unit == MS_NS then suffix = ' (milliseconds, with MS)' end
  return 'ERR ' .. name .. ' must be an integer from ' .. numstr(min) .. ' to ' .. numstr(max) .. suffix
end
local function integer(s, name, min, max)
  local n = parse_int(s, min, max)
  if n == nil then throw(range_error(name, min, max, nil)) end
  return n
end
local function lease_id(s)
  if s == nil or #s < 1 or #s > 128 then throw('ERR lease_id must be 1 to 128 bytes') end
  return s
end
local function upper(s) return string.upper(s) end
local function max_time(unit) if unit == S_NS then return MAX_SECONDS end return MAX_SECONDS * 1000 end
-- MAXWAIT w, in ns (a big integer): 0 to the maximum time in `unit`.
local function max_wait(s, unit)
  local w = parse_int(s, 0, max_time(unit))
  if w == nil then throw(range_error('MAXWAIT', 0, max_time(unit), unit)) end
  return bmul(big(w), big(unit))
end

-- The kinds: parameters (name, kind, min, max) and options, as the module's table.
-- BLOCK b: an option of every kind but LEASE (its value at P.block, µs).
local BLOCK = {'BLOCK', 'dur', block = true}
local UNITS = {'MINUTE', 'HOUR', 'DAY', 'WEEK', 'MONTH', 'YEAR'}
local KINDS = {
  THROTTLE = {name = 'THROTTLE', params = {{'max_burst', 'int', 0, 1000000000000}, {'count', 'int', 1, 4294967295}, {'period', 'dur'}}, options = {BLOCK}},
  SLIDE = {name = 'SLIDE', params = {{'limit', 'int', 1, 1000000}, {'window', 'dur'}}, options = {{'PRECISION', 'dur0'}, BLOCK}},
  SLICE = {name = 'SLICE', params = {{'limit', 'int', 1, 4294967295}, {'window', 'dur'}, {'slices', 'int', 1, 86400}}, options = {BLOCK}},
  LEASE = {name = 'LEASE', params = {{'limit', 'int', 1, 1000000}, {'ttl', 'dur'}}, options = {}, takes_id = true, no_refund = true},
  QUOTA = {name = 'QUOTA', params = {{'limit', 'int', 1, 1000000000000000}, {'unit', 'word'}}, options = {{'TZ', 'text'}, BLOCK}},
}
local KIND_WORDS = 'THROTTLE, SLIDE, SLICE, LEASE or QUOTA'

local function value_error(p, unit)
  local name, kind = p[1], p[2]
  if kind == 'dur' then return range_error(name, 1, max_time(unit), unit) end
  if kind == 'dur0' then return range_error(name, 0, max_time(unit), unit) end
  if kind == 'int' then return range_error(name, p[3], p[4], nil) end
  if kind == 'word' then return 'ERR ' .. name .. ' must be one of ' .. table.concat(UNITS, ', ') end
  return 'ERR ' .. name .. ' must be 1 to 64 bytes'
end
local function option_index(kind, word)
  if word == nil then return nil end
  for i, o in ipairs(kind.options) do
    if upper(word) == o[1] then return i end
  end
  return nil
end
local function expects(kind)
  local names = {}
  for _, p in ipairs(kind.params) do names[#names + 1] = p[1] end
  for _, o in ipairs(kind.options) do
    if not o.block then names[#names + 1] = '[' .. o[1] .. ' value]' end
  end
  return table.concat(names, ' ')
end

