-- Test only: put before prelude.lua by test_exact.py, as a command's file
-- is. Runs RL.THROTTLE's decision on many cases at once: ARGV[2] holds
-- them, one per line:
-- now_us whole_ns|- frac den max_burst count period unit_ns quantity.
-- Replies, per case, the five fields and the TAT stored ('' when none).
local entry, arg = 'lib', function(L)
  local big, bmul, bparse, numstr, reply_of, throttle = L.big, L.bmul, L.bparse, L.numstr, L.reply_of, L.throttle
  local out = {}
  for line in string.gmatch(ARGV[2], '[^\n]+') do
    local f = {}
    for w in string.gmatch(line, '%S+') do f[#f + 1] = w end
    L.set_clock(tonumber(f[1]))
    local st = nil
    if f[2] ~= '-' then st = {whole = bparse(f[2]), frac = tonumber(f[3]), den = tonumber(f[4])} end
    local unit = tonumber(f[8])
    local P = {cap = tonumber(f[5]) + 1, count = tonumber(f[6]), p = tonumber(f[7]), unit = unit}
    P.period = bmul(big(P.p), big(unit))
    P.tolerance = bmul(big(P.cap), P.period)
    local q = tonumber(f[9])
    local d, u = throttle.decide(st, P, q)
    local r = reply_of(d, unit)
    local stored = ''
    if u then stored = throttle.encode(throttle.apply(st, u, P)) end
    out[#out + 1] = table.concat({numstr(r[1]), numstr(r[2]), numstr(r[3]), numstr(r[4]), numstr(r[5]), stored}, ' ')
  end
  return table.concat(out, '\n')
end
