"""Side-by-side benchmark: the module's commands against INCR and the Lua
scripts people use today. Standard library only.

    python3 bench                    # the full run (about 12 minutes on 2 cores)
    python3 bench --quick            # a smoke run (tiny counts, 1,000 random keys, about 15 s)
    python3 bench --json out.json    # also write the results as JSON
    python3 bench --module PATH      # benchmark this .so, build nothing
    python3 bench --floor PATH       # the floor module (bench/floor.rs)

It builds the release module (not with `--module` or `--no-build`), starts
its own redis-server on a free 127.0.0.1 port (`$REDIS_SERVER`, default `redis-server` on PATH; `--save ""
--appendonly no`), loads the module (and redis-cell when `$REDIS_CELL_SO`
names its .so, adding a CL.THROTTLE row), drives it with `redis-benchmark`
(`$REDIS_BENCHMARK`, default on PATH), prints Markdown tables and always
stops the server. Nothing but 127.0.0.1 is contacted. With two cores or
more (and `taskset`), the server runs pinned to one and redis-benchmark to
another, so that the client never takes the server's core and neither
moves: the server's CPU per call, which the targets judge, is then much
steadier on a shared machine.

What each part measures
-----------------------

Two references. INCR, Redis's own per-command cost on the same keys; and
the floor: FLOOR.THROTTLE from bench/floor.rs, a module command with
RL.THROTTLE's arguments and five-integer reply that opens its key and
decides nothing, the least any module limiter with this interface can cost.
A third row, FLOOR.KEEP, also keeps state the way a limiter must (a value
per key, its expiry read and moved out on every call, WATCH told): what a
command costs beyond it is its own parsing, deciding and replying, so it
is the reference of the report's table and of the targets. A fourth,
FLOOR.LIMIT, is the whole interface deciding nothing: it also reads and
parses every argument, keeps a 16-byte value of a module type of its own
instead of a string (as a limiter keeps its state), and propagates the
call (RedisModule_ReplicateVerbatim, as the RL commands do when nothing
replays the stream); no limiter with these arguments can cost less, so it
is the bound the targets are shown against. A fifth, FLOOR.LIMIT64, is
FLOOR.LIMIT keeping a 64-byte value, the allocation of RL.SLIDE's,
RL.SLICE's and RL.QUOTA's states: on keys out of the cache a value larger
than 16 bytes is one more line to fetch (a 16-byte one is allocated beside
the server's 16-byte record of it), so it is their bound on random keys
(Row.state_floor). Every row's ratio to
FLOOR.THROTTLE, FLOOR.KEEP and INCR, measured in the same repetition, is
in the JSON; the table shows FLOOR.KEEP's and INCR's.

Throughput: five regimes, each row in each, 50 clients (the ids are the
JSON keys `throughput.<regime>`, in the order they run):

- `hot_P16` and `hot_P1`: one hot key per row, `b:<row>:hot`, pipelined
  (-P 16: mostly the server's cost per command) and not (-P 1: mostly round
  trips). Every limiter gets 1,000,000 units per 1 s, quantity 1
  (THROUGHPUT_LIMIT / THROUGHPUT_WINDOW_S; RL.THROTTLE capacity 1,000,000 =
  max_burst 999,999 and 1,000,000 per second; the scripts get the same
  figures in ms). That is far above what one key receives here, so
  practically every call is *allowed* and does its full write path (read,
  decide, store, set the expiry, replicate): the path that costs the most
  and the one comparable to INCR, which always writes.
- `rand_P16` and `rand_P1`, "100k keys, kept state": 100,000 random keys
  per row, `b:<row>:__rand_int__` with `-r 100000`, and a limit under
  which every key keeps its state between its calls, as INCR's counters
  do: 10,000 units per 10,000,000 s (KEPT_LIMIT / KEPT_WINDOW_S). So these
  regimes measure what INCR measures, a key's state updated. RL.THROTTLE,
  the GCRA and the token bucket scripts (and CL.THROTTLE): capacity 10,000
  (max_burst 9,999) and one unit back per 1,000 s (T = period / count); a
  key expires when it is full again, so it lives at least 1,000 s after
  each of its calls, and 1,000 s more for each call it received: longer
  than any gap between two calls of a key (at most about a repetition,
  under three minutes at the defaults). RL.SLIDE and the sorted-set log:
  units counted for 10,000,000 s, so the log holds one entry per call (a
  few dozen per key by the end, at the defaults), as a sliding log under a
  long window does. RL.SLICE and the hash of slices: 60 slices of
  166,667 s. The fixed window: one window of 10,000,000 s from a key's
  first call.
  RL.ALLOW: the three limits on three keys, `{b:rl_allow:__rand_int__}:t`,
  `:l` and `:s`, each number drawn on its own by redis-benchmark, so each
  of the 300,000 keys gets as many calls as another row's key. INCR's keys
  have no expiry. FLOOR.THROTTLE creates nothing. The floors that keep
  state (FLOOR.KEEP, FLOOR.LIMIT, FLOOR.LIMIT64) set their key's expiry
  to an hour after the call whatever the arguments (bench/floor.rs),
  longer than the benchmark, so their keys are made and kept exactly as
  every other row's, created once and aged alike. Before the calibration, each row's command that keeps state is called
  once on each of its keys, `b:<row>:000000000000` to
  `b:<row>:000000099999` (what `__rand_int__` becomes with `-r 100000`),
  pipelined over a raw socket, so no measurement pays for creating a key;
  the two regimes share these keys, and since none of them expires during
  the benchmark, no row pays for another's expirations. Every call stays
  allowed: from the request counts, a key's calls over the creation, the
  calibration and all repetitions are bounded before the repetitions
  (mean + 10 x sqrt(mean) + 10, Poisson; about 30 calls on average and a
  bound near 90 at the defaults) and the benchmark stops if the bound
  exceeds half the limit; after the repetitions every key of every row is
  checked to exist and peeked (quantity 0; RL.PEEK for RL.ALLOW), and the
  most used key must have units left (`kept_check` and `kept_state` of
  each row in the JSON). Each row's keys are in a database of their own
  (`--dbnum`, from database 2 on; 1.3 million keys in the server): the
  server adds a key at the head of its hash chain, so in one shared
  keyspace the rows whose keys were made last would be found first, a
  cache miss or two fewer a call than the rows made first. The server
  holds every row's keys, so INCR runs slower here than on the churn
  regime's emptied database: compare ratios within a regime, not
  requests per second across regimes.
- `rand_churn_P16`, "100k keys, state emptied between calls": the hot-key
  limit, 1,000,000 per 1 s, on 100,000 random keys, -P 16: what the
  random-key regime measured before the two above existed. A GCRA key is
  empty 1 us after a call (T = period / count) and expires about 1 ms
  later, while each key comes back every ~0.2 s: practically every
  RL.THROTTLE call finds its key expired, deletes it and creates a new one
  (398,423 expirations in 400,000 calls, measured when this was the only
  random-key regime; RL.SLICE: about 109,000), a cost INCR's keys never
  pay. This regime shows that cost on its own: it runs in database 1
  (`--dbnum 1`), emptied with FLUSHDB SYNC before and after each run,
  calibration included, so no row pays for another row's leftover keys
  (when every row ran in one keyspace without flushing, the 100,000 keys a
  row left behind were deleted by the active expire cycle during the next
  rows' runs: 32,538 expirations during one INCR run), and it reports the
  keys that expired during each run (INFO stats `expired_keys`, before and
  after) per call, next to the ratio.

Every run records its expirations; in the other regimes they are a
handful (hot keys and limit-check keys of earlier steps), reported in
total. Each repetition runs every row once per regime, in order
(interleaved), so slow phases of a shared machine hit all rows alike; each
row's throughput is divided by FLOOR.KEEP's and INCR's (and the floor's)
in the same repetition and regime, and the median of those ratios is
reported. The ratios are the figures that count. The request count per
measurement is chosen from a short calibration run so that each takes
about `--seconds` (default 2 s). The server's own CPU time per command
(INFO cpu) is recorded as well, and the command's own time per call (INFO
commandstats, before and after the run: `usec_per_call`, without reading
the request and writing the reply).

RL.ALLOW against the three single calls. Server CPU per call (INFO cpu),
hot keys, -P 16, per repetition: the RL.ALLOW row (THROTTLE + SLIDE + SLICE
on three keys) divided by the sum of the three single commands' rows. Next
to it FLOOR.ALLOW (bench/floor.rs: RL.ALLOW's arguments and
seven-element reply, three keys kept with an expiry, nothing parsed or
decided), run once per repetition after the regimes, and the least any
RL.ALLOW of these limits can cost: FLOOR.ALLOW plus, for each single
command, its CPU beyond FLOOR.KEEP's (its interface keeping one key):
parsing its numbers, deciding, recording, which RL.ALLOW does for each of
its limits too. (That sum counts the singles' per-call overhead, the
command's context, clock read and replication call, three times where
RL.ALLOW pays it once: about 200 instructions each, under 0.01 of the
ratio.)

Memory per key. For every row with a key: FLUSHALL, then the row's command
once on each of `--keys` (default 100,000) distinct keys `rl:<12 digits>`,
pipelined over a raw socket, with limit 100 per 3,600 s (so nothing expires
during the measurement); DBSIZE is checked and (used_memory after - before)
/ keys reported. This includes the key name, the server's dictionary entry
and bucket, and the expiry entry when the row sets one.

Memory per recorded unit: one RL.SLIDE key and one sorted-set-script key,
limit 1,000,000 per 3,600 s (UNIT_LIMIT, RL.SLIDE's default maximum), each
filled with N admitted units, one call per
unit (N = 1,000 and 100,000); MEMORY USAGE key SAMPLES 0, divided by N. The
marginal cost, (usage at 100,000 - usage at 1,000) / 99,000, leaves out the
fixed per-key overhead; both raw figures are printed too.

Memory with PRECISION (RL.SLIDE's adaptive entries): limit 1,000,000 per
3,600 s with PRECISION 36 (1% of the window). (a) 100,000 single-unit calls,
pipelined (a second or two of real time, within 36 s: one entry), next to
the same calls without the option; (b) the issue's "100,000 units over a
minute", scaled down 100 times so that it takes under a second: window
36,000 ms, PRECISION 360 ms, 100 calls of 1,000 units every 6 ms (about the
window's sixtieth). Entries (RL.INSPECT) and MEMORY USAGE key SAMPLES 0.

Memory at 60 slices: one RL.SLICE key and one hash-script key, limit
1,000,000 per 1,200 ms in 60 slices of 20 ms, both called every ~4 ms for
1.3 s of real time, so that all slices of the window hold units (HLEN of the
hash shows how many fields it holds); then MEMORY USAGE of each key.

Scaling. RL.SLIDE on a hot key with limit 10, 1,000 and 1,000,000 (its
default maximum) in a 3,600 s window: each key is first filled with `limit`
admitted units (one call per unit), so its log is full; the benchmark then
calls it with quantity 1, every call is limited (it must find when the
oldest unit leaves) and the log stays full. RL.SLICE on a hot key with 2, 60
and 1,000 slices, limit 1,000,000,000 per 1 s: every call is allowed and, at
thousands of calls per second, every slice of the window holds units while
slices roll over continuously (one every 1 ms at 1,000 slices). RL.ALLOW of
1, 4 and 16 limits, each an RL.THROTTLE limit of the hot-key regimes on a
key of its own (every call allowed), its figures per key. All at -P 16, 50
clients, interleaved in each repetition; ratios = the largest setting / the
smallest, per repetition, median: throughput, and cost (server CPU per
call), the figure the scale target judges.

Instructions. After the runs, a second redis-server with the same modules
runs under valgrind's callgrind (instructions.py; bench/profile.sh runs
only this part):
FLOOR.THROTTLE, FLOOR.KEEP, FLOOR.ALLOW, INCR, every single command
(RL.LEASE renewing one of 10 leases held), RL.ALLOW and RL.PEEK of the
three limits, each on a hot key with the hot-key limits, each in a
database of its own, `redis-benchmark -c 10 -P 16`, 40,000 calls of
warm-up then about 20,000 counted in one run of calls without a pause
(more than the limit's one-second window at valgrind's pace: the key
holds the state the calls keep up); instructions per call = the dump's
total, less the server's lookup of the command's name and its timer
(serverCron), / the commands it holds, and of them those in the loaded modules' own code (the rest: the
server's and the C library's). After each RL command, FLOOR.LIMIT with that command's own
arguments (FLOOR.ALLOWLIMIT for RL.ALLOW): what the command costs beyond
it is its decision and its glue. About a minute. The name's lookup is
left out because the server's command table is a hash table seeded at
random when it starts: a name that drew a bucket shared with another
command's costs about 200 instructions more (293 to 522 between the
commands of one run), whatever the command does; the timer runs so many
times a second, so its share of a call grows as valgrind's pace slows on
a loaded machine. Counts do not depend on the machine's load; a
single-key command's moves by a few tenths of a percent between runs (how
often an expiry moves depends on the pace of the calls under valgrind). Without valgrind (`apt-get install valgrind`), or with
`--no-instructions`, the counts are left out and the report says why.

The report. A header (CPU model, cores, load average, date, server,
reproduce); one table of every command: its instructions per call and
their ratio to its interface's floor (FLOOR.KEEP; FLOOR.ALLOW for RL.ALLOW
and RL.PEEK), then for each regime its throughput / FLOOR.KEEP's and /
INCR's (medians of the per-repetition ratios), expirations per call in the
churn regime, and on 100k keys with state kept at -P 16 the server's CPU
per call (INFO cpu) and the command's own time per call (INFO commandstats
`usec_per_call`), and bytes per key. So the two methods are combined per
command: instructions from callgrind, throughput and CPU from the runs.
Then the targets (targets.py: each with its measured value and PASS,
FAIL or "not measured" and why), and the details below (report_details.py).

RL.QUOTA (calendar quota) is one Row of rows.py, `RL.QUOTA key limit
unit` with the shortest of hour, day, month not shorter than the
regime's window (rows.quota_limit), in every regime and counted under
callgrind, with its own targets (hot key >= 0.92x FLOOR.KEEP, 100k keys
>= 0.9x). RL.LEASE / RL.RELEASE (concurrency leases) is one Workload of
workloads.py: acquire and release in pairs at 10 and 10,000 leases held,
next to FLOOR.KEEP pairs, and MEMORY USAGE per lease (its docstring says
how). Each is measured only when COMMAND INFO shows the loaded module has
its commands; otherwise the header and the targets say "not measured".

The module against the scripts. Each module command next to the Lua
script doing the same job (RL.THROTTLE: the GCRA and the token bucket
scripts; RL.SLIDE: the sorted-set log; RL.SLICE: the hash of slices; the
fixed window has no counterpart among the commands): its throughput divided
by the script's in the same repetition and regime, median over the
repetitions. Above 1 the module is faster.

The module, its Lua backend and the peers (aggregate.lua_backend). The
Lua backend's scripts (clients/lua: the command's file, a newline,
prelude.lua) are rows of their own,
`backend:RL.<NAME>`, `EVALSHA sha numkeys keys... [calendar] args...`
with the module command's arguments as they are, the keys in KEYS only
(clients/lua/README.md); RL.QUOTA's calendar argument
is computed once when the rows are made, in UTC, as the clients compute
it (rows.utc_calendar: boundaries from an hour before to an hour after,
so a run must end within the hour). RL.LEASE renewing one lease per key
(a fixed id) is a row, next to its Lua backend and the sorted-set
semaphore peer (bench/lua/zset_semaphore.lua); their limit check gives
each call an id of its own. For each kind, per regime: the peer of the
highest median throughput (RL.ALLOW: the three single calls of its
limits' fastest peers, throughput 1 / the sum of their 1 / throughput,
per repetition), the medians of the per-repetition ratios Lua / peer and
module / Lua, and MEMORY USAGE (SAMPLES 0) of the first key of the memory
fill. `--lua-only` measures only those rows and the references (INCR,
FLOOR.THROTTLE, FLOOR.KEEP): no scaling, workloads, unit memory,
instructions or targets.
"""
