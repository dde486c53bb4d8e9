-- The test variant (build.py --test): lib()'s names for the `lib` entry of
-- test code (clients/conformance/exact_throttle.lua), and set_clock: what
-- read_clock() would set.
local function set_clock(us) NOW = us; NOW_NS = bmul(big(us), big(1000)) end
return {big = big, bmul = bmul, bparse = bparse, numstr = numstr, reply_of = reply_of, throttle = throttle,
  set_clock = set_clock, limiter = limiter, release = release, inspect = inspect, refund = adjust, charge = adjust,
  several = several}
