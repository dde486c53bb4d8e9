-- Time and keys -----------------------------------------------------------

-- Now, in µs: the head's clock, else the server's TIME. A server that
-- refuses TIME in scripts gets the answer that tells the client to pass
-- its clock (TIME_REFUSED; clients/lua/README.md).
local function read_clock()
  if CLOCK == '' then
    local t = redis.pcall('TIME')
    if t.err then throw(TIME_REFUSED .. t.err) end
    NOW = tonumber(t[1]) * 1000000 + tonumber(t[2])
  else
    NOW = #CLOCK <= 16 and string.find(CLOCK, '^%d+$') and tonumber(CLOCK)
    if not NOW then throw("ERR ratelimit: the head's clock '" .. printable(CLOCK) .. "' is not Unix microseconds") end
  end
  NOW_NS = bmul(big(NOW), big(1000))
end
local function us_ns(us) return bmul(big(us), big(1000)) end
-- ns offset of an instant in µs from now (0 when before).
local function off_us(us) if us <= NOW then return BZERO end return big((us - NOW) * 1000) end

-- What a key holds: the raw value of the kind's representation, nil when
-- missing; WRONGTYPE when it holds anything else.
local TAGS = {THROTTLE = 'G|', QUOTA = 'Q|'}
local function key_type(key)
  local t = redis.call('TYPE', key)
  if type(t) == 'table' then t = t.ok end
  return t
end
-- BLOCK: a blocked key's block end (Unix µs) is kept in the kind's own
-- value, so that a key never blocked keeps the representation it has
-- without BLOCK: a string (THROTTLE, QUOTA) takes the prefix `B<end>|`,
-- SLIDE's header (list element 0) and SLICE's field `S` one more field,
-- `|<end>`. Every fast path's pattern refuses the marked value, so a
-- marked key takes the full code, and each write (the kind's store, which
-- writes the value or header anew) drops a block that has ended.
local function unmark(kind, v)
  local e, rest
  if kind == 'THROTTLE' or kind == 'QUOTA' then e, rest = string.match(v, '^B(%d+)|(.*)$')
  elseif kind == 'SLIDE' then rest, e = string.match(v, '^(S|%d+|%d+|%d+|[01]|%d+|%d+|%d+)|(%d+)$')
  elseif kind == 'SLICE' then rest, e = string.match(v, '^(%d+|%d+|%d+|%d+|%d+)|(%d+)$') end
  if e == nil then return v, 0 end
  return rest, tonumber(e)
end
local function load(kind, key)
  local t = key_type(key)
  if t == 'none' then return nil, 0 end
  if kind == 'THROTTLE' or kind == 'QUOTA' then
    if t ~= 'string' then throw(WRONGTYPE.err) end
    local s, e = unmark(kind, redis.call('GET', key))
    local tag = string.sub(s, 1, 2)
    if tag ~= TAGS[kind] and not (kind == 'THROTTLE' and tag == 'g|') then throw(WRONGTYPE.err) end
    return s, e
  elseif kind == 'SLIDE' then
    if t ~= 'list' then throw(WRONGTYPE.err) end
    local all = redis.call('LRANGE', key, 0, -1)
    if string.sub(all[1] or '', 1, 2) ~= 'S|' then throw(WRONGTYPE.err) end
    local e
    all[1], e = unmark(kind, all[1])
    return all, e
  else
    if t ~= 'hash' then throw(WRONGTYPE.err) end
    local mark = kind == 'SLICE' and 'S' or 'L'
    if redis.call('HEXISTS', key, mark) == 0 then throw(WRONGTYPE.err) end
    local flat = redis.call('HGETALL', key)
    local e = 0
    if kind == 'SLICE' then
      for i = 1, #flat, 2 do
        if flat[i] == 'S' then flat[i + 1], e = unmark(kind, flat[i + 1]) end
      end
    end
    return flat, e
  end
end
-- Marks the key (which holds the kind's value) blocked until `e` (µs).
local function mark_block(kind, key, e)
  local es = string.format('%d', e)
  if kind == 'THROTTLE' or kind == 'QUOTA' then
    local v = unmark(kind, redis.call('GET', key))
    redis.call('SET', key, 'B' .. es .. '|' .. v, 'KEEPTTL')
  elseif kind == 'SLIDE' then
    local v = unmark(kind, redis.call('LINDEX', key, 0))
    redis.call('LSET', key, 0, v .. '|' .. es)
  else
    local v = unmark(kind, redis.call('HGET', key, 'S'))
    redis.call('HSET', key, 'S', v .. '|' .. es)
  end
end

local function expire_ms(key)
  return redis.call('PEXPIRETIME', key)
end
-- ms (rounded up) of an instant given as a ns offset from now
local function unix_ms_ceil(off)
  if type(off) == 'number' then off = big(off) end
  return bnum(bdiv_ceil(badd(NOW_NS, off), 1000000))
end
-- Moves the key's expiry out to reset (a ns offset from now) when later;
-- a key without one gets it when or_none. `before` is the expiry the key
-- had before this call changed it (-1: none, -2: no key).
local function expire_later(key, before, reset_off, or_none)
  local ms = unix_ms_ceil(reset_off)
  local later
  if before < 0 then later = or_none else later = before < ms end
  if later then
    redis.call('PEXPIREAT', key, ms)
  elseif before >= 0 then
    redis.call('PEXPIREAT', key, before)
  end
  return later
end

-- Decisions: {limited, limit, remaining, retry (nil: not limited, 'never',
-- or a ns offset from now), reset (ns offset from now)}.
local function reply_of(d, unit)
  local function after(off)
    if type(off) == 'number' then return ceil_div(off, unit) end
    return bnum(bdiv_ceil(off, unit))
  end
  local retry = -1
  if type(d.retry) ~= 'nil' and d.retry ~= 'never' then retry = after(d.retry) end
  if d.turn then retry = after(d.turn) end
  local remaining = d.remaining
  if remaining > d.limit then remaining = d.limit end
  if remaining < 0 then remaining = 0 end
  return {d.limited and 1 or 0, d.limit, remaining, retry, after(d.reset)}
end

