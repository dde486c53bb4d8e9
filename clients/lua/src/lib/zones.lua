-- The head (A[1], ARGV[1] of every command; clients/lua/README.md):
-- clock (";" zone)*. clock: '' (the script reads the server's TIME) or the
-- Unix µs the client passes. zone: written|canonical|lo|off0(|t|off)*, the
-- UTC offsets of a zone the client's zone database knows, for the TZ value
-- written as the command line has it: off0 in effect at lo (Unix s), then
-- each change at t to off, up to lo + 800 days.
local CLOCK, ZONES = A[1], {}
local TIME_REFUSED = 'ERR ratelimit: TIME refused in scripts: '
do
  local cut = string.find(CLOCK, ';', 1, true)
  if cut then
    for seg in string.gmatch(string.sub(CLOCK, cut + 1) .. ';', '([^;]*);') do
      local written = string.match(seg, '^([^|]*)|')
      if written then ZONES[written] = seg end
    end
    CLOCK = string.sub(CLOCK, 1, cut - 1)
  end
end
local function zone_printable(s)
  local out = {}
  for i = 1, math.min(#s, 64) do
    local b = string.byte(s, i)
    if b == 92 then out[#out + 1] = '\\\\'
    elseif b >= 32 and b <= 126 then out[#out + 1] = string.char(b)
    else out[#out + 1] = string.format('\\x%02x', b) end
  end
  local text = table.concat(out)
  if #s > 64 then text = text .. '...' end
  return text
end
-- The zone of a QUOTA spec's TZ value (nil: none, UTC), as the module reads
-- it: {name = the name stored in the key, fixed = the offset (UTC, +HH:MM)}
-- or {name, lo, hi, ts = {t...}, offs = {off0, off...}} from the head; the
-- module's error for a value neither names.
local function read_zone(name)
  if name == nil or upper(name) == 'UTC' then return {name = 'UTC', fixed = 0} end
  local sign = string.sub(name, 1, 1)
  if sign == '+' or sign == '-' then
    local h, m = string.match(name, '^[+-](%d%d):(%d%d)$')
    if h == nil or tonumber(m) >= 60 then
      throw("ERR unknown time zone '" .. zone_printable(name) .. "'")
    end
    local off = (tonumber(h) * 60 + tonumber(m)) * 60
    if off > 18 * 3600 then
      throw("ERR time zone offset '" .. zone_printable(name) .. "' is out of range (-18:00 to +18:00)")
    end
    if off == 0 then return {name = 'UTC', fixed = 0} end
    return {name = name, fixed = sign == '-' and -off or off}
  end
  local seg = ZONES[name]
  if seg == nil then throw("ERR unknown time zone '" .. zone_printable(name) .. "'") end
  local fields = {}
  for f in string.gmatch(string.sub(seg, #name + 2), '[^|]+') do fields[#fields + 1] = f end
  local z = {name = fields[1], lo = tonumber(fields[2]), ts = {}, offs = {tonumber(fields[3])}}
  if z.lo == nil or z.offs[1] == nil or #fields % 2 ~= 1 then
    throw("ERR ratelimit: the head's offsets of time zone '" .. zone_printable(name) .. "' are malformed")
  end
  z.hi = z.lo + 800 * 86400
  for i = 4, #fields, 2 do
    local t, off = tonumber(fields[i]), tonumber(fields[i + 1])
    if t == nil or off == nil or t <= (z.ts[#z.ts] or z.lo) then
      throw("ERR ratelimit: the head's offsets of time zone '" .. zone_printable(name) .. "' are malformed")
    end
    z.ts[#z.ts + 1] = t
    z.offs[#z.offs + 1] = off
  end
  return z
end
