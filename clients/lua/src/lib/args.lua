-- The whole of the exact code: every command, every option, every error.
local function lib()
  local NOW -- µs since the epoch, from the server's TIME
  local NOW_NS -- the same in ns, a big integer
  -- A: the head (ARGV[1]: the clock and the zones, lib/zones.lua), then
  -- the module's argv[1..n] (the keys back in their places) as A[2..n+1].
  local A = {ARGV[1] or ''}
  local NARGS
  do
    local n, i = 1, 2
    if entry == 'several' and ARGV[i] then n = 2; A[2] = ARGV[i]; i = i + 1 end
    for k = 1, #KEYS do n = n + 1; A[n] = KEYS[k] end
    for j = i, #ARGV do n = n + 1; A[n] = ARGV[j] end
    NARGS = n - 1
  end
  local function arg(i) return A[i + 1] end

  local fmod = math.fmod
  -- Exact quotient and remainder of non-negative integers below 2^53.
  local function divmod(n, d)
    local r = fmod(n, d)
    return (n - r) / d, r
  end
  local function numstr(n) return string.format('%d', n) end
