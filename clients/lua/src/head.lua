-- redis-ratelimit's Lua backend: one script for every command (built by
-- clients/lua/build.py from clients/lua/src/; README.md has the contract).
-- The manifest's prefix of a command comes first and names the path this
-- code takes, in two locals (below).
-- KEYS: the command's keys. ARGV: the head (the clock, '' for the server's
-- TIME, and the zones' UTC offsets), then the module command's other
-- arguments, exactly as the module gets them: RL.THROTTLE k 10 20 30 is
-- KEYS {k}, ARGV {head, 10, 20, 30}; RL.ALLOW 2 a b spec... is KEYS {a, b},
-- ARGV {head, 2, spec...}.
-- Numbers are Lua doubles: integers are exact below 2^53; anything larger
-- (nanosecond instants, GCRA's scaled arithmetic) goes through the small
-- decimal big-integer helpers of lib().

-- The prefix sets `entry` and `arg`: `limiter` with the kind's name
-- (RL.THROTTLE ... RL.QUOTA), `several` with whether to write (RL.ALLOW,
-- RL.PEEK), or `inspect`, `refund`, `release` (the test variant also
-- takes `lib`: clients/conformance/exact_throttle.lua). Everything is made
-- in the block below, and only on the path a call takes: a script keeps
-- nothing between calls, so each function it defines is made again on
-- every call (a closure, each upvalue and a function wrapping this block
-- all cost: bench/results/design.md, "The Lua backend's costs"). The full code, lib(), is made only when a fast path gives
-- the call up, or for the commands without one. Decisions written twice
-- for speed: RL.THROTTLE's µs call (throttle_us.lua and fast/gcra.lua,
-- measured in bench/results/2026-12-01-lua.md) and each kind's usual call
-- (fast/ and lib/; fast() exists so that a usual call never makes lib()'s
-- hundreds of functions).
-- RL.TOP needs the module: a script keeps nothing between calls and may
-- touch only its declared keys, so it has no summary of refusals to show.
if entry == 'top' then
  return {err = 'ERR RL.TOP needs the module: the Lua backend keeps no summary of refusals'}
end
do
  -- Exact arithmetic in doubles, used wherever every value is an integer
  -- below 2^52 (a double holds it, and a % b is exact); the big integers of
  -- lib() take over when one is not. Lua function calls into C (string.*,
  -- math.*, tonumber) cost about as much as a dozen arithmetic steps, so
  -- the fast paths avoid them: strings of digits become numbers by
  -- arithmetic coercion (s + 0). Numbers become strings through
  -- string.format's %d (a 64-bit integer: every value so written is an
  -- integer below 2^53), with as few fields as can be: %.0f, tostring and
  -- .. print through the C library's floating-point code, several times
  -- dearer. So is a number given to redis.call, which the server prints
  -- with %.17g (dearer than a string: bench/results/design.md): the fast paths
  -- give it strings.
