
-- Big integers: arrays of base-10^4 limbs, least significant first.
local BASE = 10000
local function big(n)
  local t = {}
  repeat
    local q, r = divmod(n, BASE)
    t[#t + 1] = r
    n = q
  until n == 0
  return t
end
local function trim(t)
  local n = #t
  while n > 1 and t[n] == 0 do t[n] = nil; n = n - 1 end
  return t
end
local function bcmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
  end
  return 0
end
local function badd(a, b)
  local t, carry = {}, 0
  for i = 1, math.max(#a, #b) do
    local s = (a[i] or 0) + (b[i] or 0) + carry
    if s >= BASE then t[i] = s - BASE; carry = 1 else t[i] = s; carry = 0 end
  end
  if carry > 0 then t[#t + 1] = carry end
  return t
end
-- a - b, or 0 when b > a.
local function bsub(a, b)
  if bcmp(a, b) <= 0 then return {0} end
  local t, borrow = {}, 0
  for i = 1, #a do
    local s = a[i] - (b[i] or 0) - borrow
    if s < 0 then t[i] = s + BASE; borrow = 1 else t[i] = s; borrow = 0 end
  end
  return trim(t)
end
local function bmul(a, b)
  local t = {}
  for i = 1, #a + #b do t[i] = 0 end
  for i = 1, #a do
    local carry, ai = 0, a[i]
    if ai ~= 0 then
      for j = 1, #b do
        local s = t[i + j - 1] + ai * b[j] + carry
        local q, r = divmod(s, BASE)
        t[i + j - 1] = r
        carry = q
      end
      local k = i + #b
      while carry > 0 do
        local s = t[k] + carry
        local q, r = divmod(s, BASE)
        t[k] = r
        carry = q
        k = k + 1
      end
    end
  end
  return trim(t)
end
-- Quotient and remainder by d, 1 <= d < 9 * 10^11.
local function bdiv(a, d)
  local t, r = {}, 0
  for i = #a, 1, -1 do
    local q
    q, r = divmod(r * BASE + a[i], d)
    t[i] = q
  end
  return trim(t), r
end
local function bdiv_ceil(a, d)
  local q, r = bdiv(a, d)
  if r > 0 then q = badd(q, {1}) end
  return q
end
-- The value as a double; only for values known to be below 2^53.
local function bnum(a)
  local n = 0
  for i = #a, 1, -1 do n = n * BASE + a[i] end
  return n
end
local function bstr(a)
  local parts = {string.format('%d', a[#a])}
  for i = #a - 1, 1, -1 do parts[#parts + 1] = string.format('%04d', a[i]) end
  return table.concat(parts)
end
local function bparse(s)
  local t = {}
  local i = #s
  while i >= 1 do
    local j = math.max(1, i - 3)
    t[#t + 1] = tonumber(string.sub(s, j, i))
    i = j - 1
  end
  if #t == 0 then t[1] = 0 end
  return trim(t)
end
local function bmax(a, b) if bcmp(a, b) >= 0 then return a end return b end
local function bmin(a, b) if bcmp(a, b) <= 0 then return a end return b end
local BZERO = {0}
local function biszero(a) return #a == 1 and a[1] == 0 end
