package io.github.redisratelimit;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The module's commands as typed calls, with the module's parameter names,
 * each synchronous ({@code throttle}) and asynchronous
 * ({@code throttleAsync}, a {@link CompletionStage}); the limits as values
 * for {@link #allow}, {@link #peek}, {@link #take}, {@link #refund} and
 * {@link #charge}; costs known afterwards settled in one round trip
 * ({@link #settle}); a lease held by try-with-resources
 * ({@link #acquire(String, Lease)}); a turn waited for
 * ({@link #acquire(String, Throttle, Duration)}, MAXWAIT); the most refused
 * keys ({@link #top()}).
 *
 * <pre>{@code
 * RateLimiter limiter = RateLimiter.create(LettuceConnection.of(redisClient));
 * Result r = limiter.take("rl:code:" + email, Limit.slide(5, 3600));
 * if (r.limited()) { ... r.retryAfter() seconds ... }
 * }</pre>
 *
 * <p>The backend is chosen on the first call: the module where it is loaded
 * (detected once, with its PREFIX), else the Lua scripts; or forced with
 * {@link Builder#backend}. Nothing is checked here: the arguments go to the
 * backend as the module's text and an {@code ERR} reply comes back as an
 * {@link ArgumentException} naming the argument, {@code WRONGTYPE} as a
 * {@link WrongTypeException}. The one exception is a call that has no
 * command line: RL.ALLOW's limits disagreeing on {@code ms} (MS is one
 * flag for the whole call) throws {@link IllegalArgumentException}.
 */
public final class RateLimiter {
    /** Which backend answers: the module if loaded, else Lua ({@code AUTO}); or forced. */
    public enum BackendChoice {
        /** The module where it is loaded, else the Lua scripts. */
        AUTO,
        /** The module only (an error where it is not loaded). */
        MODULE,
        /** The Lua scripts, even where the module is loaded. */
        LUA
    }

    /** Whose clock the Lua scripts use (CONTRACT: "Servers that refuse TIME"). */
    public enum Clock {
        /** The server's TIME, and the client-passed time once the server refuses TIME in scripts. */
        AUTO,
        /** Always the server's TIME inside the script. */
        SERVER,
        /** Always the time the client passes (the server's clock read outside the script). */
        CLIENT
    }

    private static final SecureRandom RANDOM = new SecureRandom();

    private final RedisConnection connection;
    private final BackendChoice choice;
    private final String prefix;
    private final Clock clock;
    private final LongSupplier wallMillis;
    private final LongSupplier nanoTime;
    private volatile Backend chosen;
    private volatile ScheduledExecutorService renewals;

    private RateLimiter(Builder b) {
        this.connection = b.connection;
        this.choice = b.choice;
        this.prefix = b.prefix;
        this.clock = b.clock;
        this.wallMillis = b.wallMillis;
        this.nanoTime = b.nanoTime;
    }

    /**
     * A limiter on {@code connection}, the backend chosen on the first call.
     *
     * @param connection a {@link LettuceConnection}, a {@link JedisConnection} or your own
     * @return the limiter
     */
    public static RateLimiter create(RedisConnection connection) {
        return builder(connection).build();
    }

    /**
     * A builder of a limiter on {@code connection}.
     *
     * @param connection the connection
     * @return the builder
     */
    public static Builder builder(RedisConnection connection) {
        return new Builder(connection);
    }

    /** How a limiter is made. */
    public static final class Builder {
        private final RedisConnection connection;
        private BackendChoice choice = BackendChoice.AUTO;
        private String prefix;
        private Clock clock = Clock.AUTO;
        private LongSupplier wallMillis = System::currentTimeMillis;
        private LongSupplier nanoTime = System::nanoTime;
        private ScheduledExecutorService renewals;

        private Builder(RedisConnection connection) {
            if (connection == null) {
                throw new NullPointerException("connection");
            }
            this.connection = connection;
        }

        /**
         * @param choice AUTO (default), MODULE or LUA
         * @return this
         */
        public Builder backend(BackendChoice choice) {
            this.choice = choice;
            return this;
        }

        /**
         * The module's command prefix, which skips its detection (the module backend only).
         *
         * @param prefix the word given to the module's PREFIX option ({@code RL} by default)
         * @return this
         */
        public Builder prefix(String prefix) {
            this.prefix = prefix;
            return this;
        }

        /**
         * @param clock the Lua backend's clock: AUTO (default), SERVER or CLIENT
         * @return this
         */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /**
         * The wall clock the Lua backend computes a zone's offsets around (tests).
         *
         * @param wallMillis Unix milliseconds
         * @return this
         */
        public Builder wallClock(LongSupplier wallMillis) {
            this.wallMillis = wallMillis;
            return this;
        }

        /**
         * The executor that renews leases (default: one daemon thread, made on the first lease).
         *
         * @param executor the executor
         * @return this
         */
        public Builder renewals(ScheduledExecutorService executor) {
            this.renewals = executor;
            return this;
        }

        /** @return the limiter */
        public RateLimiter build() {
            RateLimiter r = new RateLimiter(this);
            r.renewals = renewals;
            return r;
        }
    }

    /** The connection the limiter sends on. */
    public RedisConnection connection() {
        return connection;
    }

    // -- the backend ------------------------------------------------------

    /**
     * The backend that answers, chosen on the first call and kept:
     * {@code module} or {@code lua}.
     *
     * @return its kind
     */
    public String backendKind() {
        return backendSync().kind();
    }

    /**
     * The module's command prefix in use, or empty for the Lua backend.
     *
     * @return the prefix
     */
    public Optional<String> modulePrefix() {
        return backendSync() instanceof ModuleBackend m ? Optional.of(m.prefix()) : Optional.empty();
    }

    private Backend backendSync() {
        Backend b = chosen;
        return b != null ? b : Futures.join(backend());
    }

    private CompletionStage<Backend> backend() {
        Backend b = chosen;
        if (b != null) {
            return CompletableFuture.completedFuture(b);
        }
        CompletionStage<Backend> detected;
        if (choice == BackendChoice.LUA) {
            detected = CompletableFuture.completedFuture(lua());
        } else if (choice == BackendChoice.MODULE && prefix != null) {
            detected = CompletableFuture.completedFuture(new ModuleBackend(connection, prefix));
        } else {
            detected = detectPrefix(connection).thenApply(found -> {
                if (found.isPresent()) {
                    return new ModuleBackend(connection, prefix != null ? prefix : found.get());
                }
                if (choice == BackendChoice.MODULE) {
                    throw new BackendUnavailableException("the redis-ratelimit module is not loaded on this "
                            + "server (COMMAND LIST FILTERBY MODULE ratelimit is empty): load it "
                            + "(loadmodule /path/to/libredis_ratelimit.so), or use BackendChoice.LUA or AUTO");
                }
                return lua();
            });
        }
        return detected.thenApply(found -> {
            synchronized (this) {
                if (chosen == null) {
                    chosen = found;
                }
                return chosen;
            }
        });
    }

    private Backend lua() {
        return new LuaBackend(connection, clock, wallMillis, nanoTime);
    }

    /**
     * The module's command prefix on the server behind {@code connection}
     * ({@code RL}, or the word of the module's PREFIX option), or empty when
     * the module is not loaded. Asks COMMAND LIST FILTERBY MODULE ratelimit;
     * where that is refused (ACL), COMMAND INFO RL.THROTTLE, which finds the
     * default prefix only.
     *
     * @param connection the connection
     * @return the prefix
     */
    public static CompletionStage<Optional<String>> detectPrefix(RedisConnection connection) {
        List<byte[]> list = bytes(List.of("LIST", "FILTERBY", "MODULE", "ratelimit"));
        return connection.send("COMMAND", list, -1, -1).thenApply(reply -> {
            for (Object name : Replies.array(reply, "COMMAND LIST's names")) {
                String n = Replies.text(name);
                if (n.toLowerCase(Locale.ROOT).endsWith(".throttle")) {
                    return Optional.of(n.substring(0, n.length() - ".throttle".length()));
                }
            }
            return Optional.<String>empty();
        }).exceptionallyCompose(err -> {
            String text = Replies.errorText(err);
            if (text == null || !(text.startsWith("ERR") || text.startsWith("NOPERM"))) {
                return CompletableFuture.failedFuture(Futures.unwrap(err));
            }
            return connection.send("COMMAND", bytes(List.of("INFO", "RL.THROTTLE")), -1, -1).thenApply(info -> {
                List<?> l = Replies.array(info, "COMMAND INFO's reply");
                return !l.isEmpty() && l.get(0) != null ? Optional.of("RL") : Optional.<String>empty();
            });
        });
    }

    // -- sending ----------------------------------------------------------

    private record Line(String name, List<byte[]> args, int keyFrom, int keyTo) {}

    private static List<byte[]> bytes(List<String> words) {
        List<byte[]> out = new ArrayList<>(words.size());
        for (String w : words) {
            out.add(w.getBytes(StandardCharsets.UTF_8));
        }
        return out;
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] b(long n) {
        return Long.toString(n).getBytes(StandardCharsets.US_ASCII);
    }

    private <T> T run(Line line, Function<Object, T> parse) {
        Object reply;
        try {
            reply = backendSync().callSync(line.name, line.args, line.keyFrom, line.keyTo);
        } catch (RuntimeException e) {
            throw Replies.translate(e);
        }
        return parse.apply(reply);
    }

    private <T> CompletionStage<T> runAsync(Line line, Function<Object, T> parse) {
        CompletableFuture<T> out = new CompletableFuture<>();
        backend().thenCompose(bk -> bk.call(line.name, line.args, line.keyFrom, line.keyTo))
                .whenComplete((reply, err) -> {
                    if (err != null) {
                        out.completeExceptionally(Replies.translate(err));
                        return;
                    }
                    try {
                        out.complete(parse.apply(reply));
                    } catch (RuntimeException e) {
                        out.completeExceptionally(e);
                    }
                });
        return out;
    }

    private static Line single(String name, String key, List<String> numbers, long quantity, boolean ms,
                               List<String> options) {
        List<byte[]> args = new ArrayList<>(numbers.size() + options.size() + 3);
        args.add(b(key));
        for (String n : numbers) {
            args.add(b(n));
        }
        if (quantity >= 0) {
            args.add(b(quantity));
        }
        if (ms) {
            args.add(b("MS"));
        }
        for (String o : options) {
            args.add(b(o));
        }
        return new Line(name, args, 0, 1);
    }

    // -- the commands -----------------------------------------------------

    private static Line throttleLine(String key, long maxBurst, long count, long period, long quantity, boolean ms) {
        return single("THROTTLE", key, List.of(Long.toString(maxBurst), Long.toString(count), Long.toString(period)),
                quantity, ms, List.of());
    }

    /**
     * RL.THROTTLE key max_burst count period.
     *
     * @param key      the key
     * @param maxBurst max_burst
     * @param count    count
     * @param period   period, in seconds
     * @return the five fields
     */
    public Result throttle(String key, long maxBurst, long count, long period) {
        return run(throttleLine(key, maxBurst, count, period, -1, false), Replies::result);
    }

    /**
     * RL.THROTTLE key max_burst count period quantity [MS].
     *
     * @param key      the key
     * @param maxBurst max_burst
     * @param count    count
     * @param period   period (ms with {@code ms})
     * @param quantity quantity (0 peeks)
     * @param ms       MS: times in milliseconds
     * @return the five fields
     */
    public Result throttle(String key, long maxBurst, long count, long period, long quantity, boolean ms) {
        return run(throttleLine(key, maxBurst, count, period, quantity, ms), Replies::result);
    }

    /**
     * RL.THROTTLE key max_burst count period, asynchronously.
     *
     * @param key      the key
     * @param maxBurst max_burst
     * @param count    count
     * @param period   period, in seconds
     * @return the five fields
     */
    public CompletionStage<Result> throttleAsync(String key, long maxBurst, long count, long period) {
        return runAsync(throttleLine(key, maxBurst, count, period, -1, false), Replies::result);
    }

    /**
     * RL.THROTTLE key max_burst count period quantity [MS], asynchronously.
     *
     * @param key      the key
     * @param maxBurst max_burst
     * @param count    count
     * @param period   period (ms with {@code ms})
     * @param quantity quantity (0 peeks)
     * @param ms       MS
     * @return the five fields
     */
    public CompletionStage<Result> throttleAsync(String key, long maxBurst, long count, long period,
                                                 long quantity, boolean ms) {
        return runAsync(throttleLine(key, maxBurst, count, period, quantity, ms), Replies::result);
    }

    private static Line slideLine(String key, long limit, long window, long quantity, boolean ms, Long precision) {
        return single("SLIDE", key, List.of(Long.toString(limit), Long.toString(window)), quantity, ms,
                precision == null ? List.of() : List.of("PRECISION", precision.toString()));
    }

    /**
     * RL.SLIDE key limit window.
     *
     * @param key    the key
     * @param limit  limit
     * @param window window, in seconds
     * @return the five fields
     */
    public Result slide(String key, long limit, long window) {
        return run(slideLine(key, limit, window, -1, false, null), Replies::result);
    }

    /**
     * RL.SLIDE key limit window quantity [MS] [PRECISION d].
     *
     * @param key       the key
     * @param limit     limit
     * @param window    window (ms with {@code ms})
     * @param quantity  quantity (0 peeks)
     * @param ms        MS
     * @param precision PRECISION d, or null
     * @return the five fields
     */
    public Result slide(String key, long limit, long window, long quantity, boolean ms, Long precision) {
        return run(slideLine(key, limit, window, quantity, ms, precision), Replies::result);
    }

    /**
     * RL.SLIDE key limit window quantity [MS] [PRECISION d], asynchronously.
     *
     * @param key       the key
     * @param limit     limit
     * @param window    window
     * @param quantity  quantity
     * @param ms        MS
     * @param precision PRECISION d, or null
     * @return the five fields
     */
    public CompletionStage<Result> slideAsync(String key, long limit, long window, long quantity, boolean ms,
                                              Long precision) {
        return runAsync(slideLine(key, limit, window, quantity, ms, precision), Replies::result);
    }

    private static Line sliceLine(String key, long limit, long window, long slices, long quantity, boolean ms) {
        return single("SLICE", key, List.of(Long.toString(limit), Long.toString(window), Long.toString(slices)),
                quantity, ms, List.of());
    }

    /**
     * RL.SLICE key limit window slices.
     *
     * @param key    the key
     * @param limit  limit
     * @param window window, in seconds
     * @param slices slices
     * @return the five fields
     */
    public Result slice(String key, long limit, long window, long slices) {
        return run(sliceLine(key, limit, window, slices, -1, false), Replies::result);
    }

    /**
     * RL.SLICE key limit window slices quantity [MS].
     *
     * @param key      the key
     * @param limit    limit
     * @param window   window
     * @param slices   slices
     * @param quantity quantity
     * @param ms       MS
     * @return the five fields
     */
    public Result slice(String key, long limit, long window, long slices, long quantity, boolean ms) {
        return run(sliceLine(key, limit, window, slices, quantity, ms), Replies::result);
    }

    /**
     * RL.SLICE key limit window slices quantity [MS], asynchronously.
     *
     * @param key      the key
     * @param limit    limit
     * @param window   window
     * @param slices   slices
     * @param quantity quantity
     * @param ms       MS
     * @return the five fields
     */
    public CompletionStage<Result> sliceAsync(String key, long limit, long window, long slices, long quantity,
                                              boolean ms) {
        return runAsync(sliceLine(key, limit, window, slices, quantity, ms), Replies::result);
    }

    private static Line leaseLine(String key, long limit, long ttl, String leaseId, long quantity, boolean ms) {
        return single("LEASE", key, List.of(Long.toString(limit), Long.toString(ttl), leaseId), quantity, ms,
                List.of());
    }

    /**
     * RL.LEASE key limit ttl lease_id: takes or renews the lease.
     *
     * @param key     the key
     * @param limit   limit
     * @param ttl     ttl, in seconds
     * @param leaseId lease_id
     * @return the five fields
     */
    public Result lease(String key, long limit, long ttl, String leaseId) {
        return run(leaseLine(key, limit, ttl, leaseId, -1, false), Replies::result);
    }

    /**
     * RL.LEASE key limit ttl lease_id quantity [MS].
     *
     * @param key      the key
     * @param limit    limit
     * @param ttl      ttl
     * @param leaseId  lease_id
     * @param quantity quantity (the lease's weight; 0 peeks)
     * @param ms       MS
     * @return the five fields
     */
    public Result lease(String key, long limit, long ttl, String leaseId, long quantity, boolean ms) {
        return run(leaseLine(key, limit, ttl, leaseId, quantity, ms), Replies::result);
    }

    /**
     * RL.LEASE key limit ttl lease_id quantity [MS], asynchronously.
     *
     * @param key      the key
     * @param limit    limit
     * @param ttl      ttl
     * @param leaseId  lease_id
     * @param quantity quantity
     * @param ms       MS
     * @return the five fields
     */
    public CompletionStage<Result> leaseAsync(String key, long limit, long ttl, String leaseId, long quantity,
                                              boolean ms) {
        return runAsync(leaseLine(key, limit, ttl, leaseId, quantity, ms), Replies::result);
    }

    private static Line releaseLine(String key, String leaseId) {
        return new Line("RELEASE", List.of(b(key), b(leaseId)), 0, 1);
    }

    /**
     * RL.RELEASE key lease_id.
     *
     * @param key     the key
     * @param leaseId lease_id
     * @return true when the lease was held
     */
    public boolean release(String key, String leaseId) {
        return run(releaseLine(key, leaseId), Replies::released);
    }

    /**
     * RL.RELEASE key lease_id, asynchronously.
     *
     * @param key     the key
     * @param leaseId lease_id
     * @return true when the lease was held
     */
    public CompletionStage<Boolean> releaseAsync(String key, String leaseId) {
        return runAsync(releaseLine(key, leaseId), Replies::released);
    }

    private static Line quotaLine(String key, long limit, QuotaUnit unit, long quantity, String tz, boolean ms) {
        List<byte[]> args = new ArrayList<>(8);
        args.add(b(key));
        args.add(b(limit));
        args.add(b(unit.name()));
        if (quantity >= 0) {
            args.add(b(quantity));
        }
        if (tz != null) {
            args.add(b("TZ"));
            args.add(b(tz));
        }
        if (ms) {
            args.add(b("MS"));
        }
        return new Line("QUOTA", args, 0, 1);
    }

    /**
     * RL.QUOTA key limit unit.
     *
     * @param key   the key
     * @param limit limit
     * @param unit  unit
     * @return the five fields
     */
    public Result quota(String key, long limit, QuotaUnit unit) {
        return run(quotaLine(key, limit, unit, -1, null, false), Replies::result);
    }

    /**
     * RL.QUOTA key limit unit quantity [TZ zone] [MS].
     *
     * @param key      the key
     * @param limit    limit
     * @param unit     unit
     * @param quantity quantity
     * @param tz       TZ zone, or null
     * @param ms       MS
     * @return the five fields
     */
    public Result quota(String key, long limit, QuotaUnit unit, long quantity, String tz, boolean ms) {
        return run(quotaLine(key, limit, unit, quantity, tz, ms), Replies::result);
    }

    /**
     * RL.QUOTA key limit unit quantity [TZ zone] [MS], asynchronously.
     *
     * @param key      the key
     * @param limit    limit
     * @param unit     unit
     * @param quantity quantity
     * @param tz       TZ zone, or null
     * @param ms       MS
     * @return the five fields
     */
    public CompletionStage<Result> quotaAsync(String key, long limit, QuotaUnit unit, long quantity, String tz,
                                              boolean ms) {
        return runAsync(quotaLine(key, limit, unit, quantity, tz, ms), Replies::result);
    }

    private static Line takeLine(String key, Limit limit, long quantity, String id) {
        List<String> numbers = new ArrayList<>(limit.commandArgs());
        if (limit instanceof Lease) {
            numbers.add(id == null ? "" : id);
        }
        return single(limit.command(), key, numbers, quantity, limit.ms(), limit.commandOptions());
    }

    /**
     * One limit alone, by its kind's command (RL.THROTTLE for a {@link Throttle}, ...).
     *
     * @param key   the key
     * @param limit the limit (not a {@link Lease}: see {@link #acquire})
     * @return the five fields
     */
    public Result take(String key, Limit limit) {
        return run(takeLine(key, limit, -1, null), Replies::result);
    }

    /**
     * One limit alone, for {@code quantity} units; a {@link Lease} needs its lease id.
     *
     * @param key      the key
     * @param limit    the limit
     * @param quantity quantity (0 peeks)
     * @param leaseId  the lease id for a Lease, else null
     * @return the five fields
     */
    public Result take(String key, Limit limit, long quantity, String leaseId) {
        return run(takeLine(key, limit, quantity, leaseId), Replies::result);
    }

    /**
     * {@link #take(String, Limit)}, asynchronously.
     *
     * @param key   the key
     * @param limit the limit
     * @return the five fields
     */
    public CompletionStage<Result> takeAsync(String key, Limit limit) {
        return runAsync(takeLine(key, limit, -1, null), Replies::result);
    }

    /**
     * {@link #take(String, Limit, long, String)}, asynchronously.
     *
     * @param key      the key
     * @param limit    the limit
     * @param quantity quantity
     * @param leaseId  the lease id for a Lease, else null
     * @return the five fields
     */
    public CompletionStage<Result> takeAsync(String key, Limit limit, long quantity, String leaseId) {
        return runAsync(takeLine(key, limit, quantity, leaseId), Replies::result);
    }

    private static Line several(String name, List<Entry> entries, long quantity, String id) {
        return several(name, entries, quantity, id, -1);
    }

    private static Line several(String name, List<Entry> entries, long quantity, String id, long maxWait) {
        boolean ms = !entries.isEmpty() && entries.get(0).limit().ms();
        for (Entry e : entries) {
            if (e.limit().ms() != ms) {
                throw new IllegalArgumentException(
                        "the limits of one RL.ALLOW or RL.PEEK must all have ms, or none (MS is one flag)");
            }
        }
        List<byte[]> args = new ArrayList<>(entries.size() * 5 + 6);
        args.add(b(entries.size()));
        for (Entry e : entries) {
            args.add(b(e.key()));
        }
        for (Entry e : entries) {
            for (String w : e.limit().spec()) {
                args.add(b(w));
            }
        }
        if (quantity >= 0) {
            args.add(b("QUANTITY"));
            args.add(b(quantity));
        }
        if (ms) {
            args.add(b("MS"));
        }
        if (maxWait >= 0) {
            args.add(b("MAXWAIT"));
            args.add(b(maxWait));
        }
        if (id != null) {
            args.add(b("ID"));
            args.add(b(id));
        }
        return new Line(name, args, entries.isEmpty() ? -1 : 1, 1 + entries.size());
    }

    /**
     * RL.ALLOW: every limit at once, all or nothing (on a cluster, its keys in one slot).
     *
     * @param entries the limits on their keys
     * @return the binding limit's fields, its index and each limit's result
     */
    public AllowResult allow(List<Entry> entries) {
        return run(several("ALLOW", entries, -1, null), Replies::allowResult);
    }

    /**
     * RL.ALLOW with QUANTITY q and ID lease_id.
     *
     * @param entries  the limits on their keys
     * @param quantity QUANTITY q (-1: none, the module's default 1)
     * @param leaseId  ID lease_id (for LEASE limits), or null
     * @return the binding limit's fields, its index and each limit's result
     */
    public AllowResult allow(List<Entry> entries, long quantity, String leaseId) {
        return run(several("ALLOW", entries, quantity, leaseId), Replies::allowResult);
    }

    /**
     * RL.ALLOW, asynchronously.
     *
     * @param entries  the limits on their keys
     * @param quantity QUANTITY q (-1: none)
     * @param leaseId  ID lease_id, or null
     * @return the result
     */
    public CompletionStage<AllowResult> allowAsync(List<Entry> entries, long quantity, String leaseId) {
        try {
            return runAsync(several("ALLOW", entries, quantity, leaseId), Replies::allowResult);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private static List<Line> eachLines(List<Entry> entries, long quantity, String leaseId) {
        List<Line> lines = new ArrayList<>(entries.size());
        for (Entry e : entries) {
            lines.add(several("ALLOW", List.of(e), quantity, e.limit() instanceof Lease ? leaseId : null));
        }
        return lines;
    }

    private static List<RedisConnection.Command> lineCommands(List<Line> lines) {
        return commands(lines);
    }

    /**
     * One {@code RL.ALLOW 1 key spec} per entry, each decided alone, all in
     * one pipeline (one round trip): what a middleware sends when every rule
     * of a request is SHADOW, which one RL.ALLOW refuses. The specs are sent
     * as they are (take the SHADOW out first: {@link Limit#enforced()}).
     *
     * @param entries  the limits on their keys
     * @param quantity QUANTITY q of each (-1: none)
     * @param leaseId  ID lease_id of the LEASE entries, or null
     * @return each entry's own RL.ALLOW reply, in order
     */
    public CompletionStage<List<AllowResult>> allowEachAsync(List<Entry> entries, long quantity, String leaseId) {
        List<Line> lines;
        try {
            lines = eachLines(entries, quantity, leaseId);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (lines.isEmpty()) {
            return CompletableFuture.completedFuture(List.of());
        }
        return backend().thenCompose(bk -> {
            List<CompletionStage<Object>> replies = bk.callAll(lineCommands(lines), false);
            CompletableFuture<?>[] all = replies.stream().map(CompletionStage::toCompletableFuture)
                    .toArray(CompletableFuture[]::new);
            return CompletableFuture.allOf(all).thenApply(v -> {
                List<AllowResult> out = new ArrayList<>(replies.size());
                for (CompletionStage<Object> r : replies) {
                    out.add(Replies.allowResult(r.toCompletableFuture().join()));
                }
                return List.copyOf(out);
            });
        }).handle((r, err) -> {
            if (err != null) {
                throw Replies.translate(err);
            }
            return r;
        });
    }

    /**
     * RL.PEEK: what RL.ALLOW would answer now, changing nothing.
     *
     * @param entries the limits on their keys
     * @return the result
     */
    public AllowResult peek(List<Entry> entries) {
        return run(several("PEEK", entries, -1, null), Replies::allowResult);
    }

    /**
     * RL.PEEK with QUANTITY q and ID lease_id.
     *
     * @param entries  the limits on their keys
     * @param quantity QUANTITY q (-1: none)
     * @param leaseId  ID lease_id, or null
     * @return the result
     */
    public AllowResult peek(List<Entry> entries, long quantity, String leaseId) {
        return run(several("PEEK", entries, quantity, leaseId), Replies::allowResult);
    }

    /**
     * RL.PEEK, asynchronously.
     *
     * @param entries  the limits on their keys
     * @param quantity QUANTITY q (-1: none)
     * @param leaseId  ID lease_id, or null
     * @return the result
     */
    public CompletionStage<AllowResult> peekAsync(List<Entry> entries, long quantity, String leaseId) {
        try {
            return runAsync(several("PEEK", entries, quantity, leaseId), Replies::allowResult);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * RL.INSPECT key: what the key holds.
     *
     * @param key the key
     * @return its state, empty when there is no key
     */
    public Optional<KeyState> inspect(String key) {
        return run(new Line("INSPECT", List.of(b(key)), 0, 1), r -> Optional.ofNullable(Replies.keyState(r)));
    }

    /**
     * RL.INSPECT key, asynchronously.
     *
     * @param key the key
     * @return its state, empty when there is no key
     */
    public CompletionStage<Optional<KeyState>> inspectAsync(String key) {
        return runAsync(new Line("INSPECT", List.of(b(key)), 0, 1), r -> Optional.ofNullable(Replies.keyState(r)));
    }

    private static Line giveLine(String name, String key, Limit limit, long quantity) {
        List<byte[]> args = new ArrayList<>(8);
        args.add(b(key));
        for (String w : limit.baseSpec()) {
            args.add(b(w));
        }
        args.add(b(quantity));
        if (limit.ms()) {
            args.add(b("MS"));
        }
        return new Line(name, args, 0, 1);
    }

    private static Line refundLine(String key, Limit limit, long quantity) {
        return giveLine("REFUND", key, limit, quantity);
    }

    /**
     * RL.REFUND key spec quantity [MS]: gives back up to {@code quantity} units.
     * The spec is sent without BLOCK, UNITS and SHADOW ({@link Limit#baseSpec}).
     *
     * @param key      the key
     * @param limit    the limit the units were taken under (the module refuses a LEASE)
     * @param quantity quantity
     * @return the five fields, as a peek right after it
     */
    public Result refund(String key, Limit limit, long quantity) {
        return run(refundLine(key, limit, quantity), Replies::result);
    }

    /**
     * RL.REFUND, asynchronously.
     *
     * @param key      the key
     * @param limit    the limit
     * @param quantity quantity
     * @return the five fields
     */
    public CompletionStage<Result> refundAsync(String key, Limit limit, long quantity) {
        return runAsync(refundLine(key, limit, quantity), Replies::result);
    }

    /**
     * RL.CHARGE key spec quantity [MS]: records {@code quantity} units at
     * once, unconditionally (work already done), even past the limit: the
     * key is then in debt and refuses until it is paid back. The spec is
     * sent without BLOCK, UNITS and SHADOW ({@link Limit#baseSpec}).
     *
     * @param key      the key
     * @param limit    the limit the units count against (the module refuses a LEASE)
     * @param quantity quantity
     * @return the five fields, as a peek right after it
     */
    public Result charge(String key, Limit limit, long quantity) {
        return run(giveLine("CHARGE", key, limit, quantity), Replies::result);
    }

    /**
     * RL.CHARGE, asynchronously.
     *
     * @param key      the key
     * @param limit    the limit
     * @param quantity quantity
     * @return the five fields
     */
    public CompletionStage<Result> chargeAsync(String key, Limit limit, long quantity) {
        return runAsync(giveLine("CHARGE", key, limit, quantity), Replies::result);
    }

    private static List<Line> settleLines(List<Entry> entries, List<Long> taken, List<Long> actual) {
        if (taken.size() != entries.size() || actual.size() != entries.size()) {
            throw new IllegalArgumentException("settle: " + entries.size() + " limits, " + taken.size()
                    + " taken and " + actual.size() + " actual (one each, or use the scalar form)");
        }
        List<Line> lines = new ArrayList<>(entries.size());
        for (int i = 0; i < entries.size(); i++) {
            Entry e = entries.get(i);
            long t = taken.get(i);
            long a = actual.get(i);
            if (a < t) {
                lines.add(giveLine("REFUND", e.key(), e.limit(), t - a));
            } else if (a > t) {
                lines.add(giveLine("CHARGE", e.key(), e.limit(), a - t));
            } else {
                lines.add(null);
            }
        }
        return lines;
    }

    private static List<RedisConnection.Command> commands(List<Line> lines) {
        List<RedisConnection.Command> out = new ArrayList<>(lines.size());
        for (Line l : lines) {
            if (l != null) {
                out.add(new RedisConnection.Command(l.name, l.args, l.keyFrom, l.keyTo));
            }
        }
        return out;
    }

    private static List<Long> same(long value, int n) {
        List<Long> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(value);
        }
        return out;
    }

    /**
     * Settles what a request took against what it used (the LLM pattern:
     * take an estimate, settle the real count when it is known): per limit,
     * {@code RL.REFUND} of {@code taken - actual}, or {@code RL.CHARGE} of
     * {@code actual - taken}, or nothing when they are equal; all in one
     * pipeline (one round trip; on the Lua backend the EVALSHAs pipelined).
     *
     * @param entries the limits on their keys, as they were taken
     * @param taken   what was taken of each
     * @param actual  what was used of each
     * @return each limit's five fields after it, in order; null where nothing was sent
     * @throws IllegalArgumentException when the lists' sizes differ
     */
    public List<Result> settle(List<Entry> entries, List<Long> taken, List<Long> actual) {
        List<Line> lines = settleLines(entries, taken, actual);
        List<RedisConnection.Command> sent = commands(lines);
        List<CompletionStage<Object>> replies;
        try {
            replies = sent.isEmpty() ? List.of() : backendSync().callAll(sent, true);
        } catch (RuntimeException e) {
            throw Replies.translate(e);
        }
        List<Result> out = new ArrayList<>(lines.size());
        RuntimeException first = null;
        int n = 0;
        for (Line l : lines) {
            if (l == null) {
                out.add(null);
                continue;
            }
            try {
                out.add(Replies.result(Futures.join(replies.get(n++))));
            } catch (RuntimeException e) {
                out.add(null);
                if (first == null) {
                    first = Replies.translate(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
        return java.util.Collections.unmodifiableList(out);
    }

    /**
     * {@link #settle(List, List, List)} with the same taken and actual for every limit.
     *
     * @param entries the limits on their keys
     * @param taken   what was taken (of each)
     * @param actual  what was used (of each)
     * @return each limit's five fields after it; null where nothing was sent
     */
    public List<Result> settle(List<Entry> entries, long taken, long actual) {
        return settle(entries, same(taken, entries.size()), same(actual, entries.size()));
    }

    /**
     * {@link #settle(List, List, List)}, asynchronously; fails with the
     * first failing command's error (the others were carried out).
     *
     * @param entries the limits on their keys
     * @param taken   what was taken of each
     * @param actual  what was used of each
     * @return each limit's five fields after it; null where nothing was sent
     */
    public CompletionStage<List<Result>> settleAsync(List<Entry> entries, List<Long> taken, List<Long> actual) {
        List<Line> lines;
        try {
            lines = settleLines(entries, taken, actual);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        List<RedisConnection.Command> sent = commands(lines);
        if (sent.isEmpty()) {
            return CompletableFuture.completedFuture(java.util.Collections.unmodifiableList(nulls(lines.size())));
        }
        CompletableFuture<List<Result>> out = new CompletableFuture<>();
        backend().thenAccept(bk -> {
            List<CompletionStage<Object>> replies = bk.callAll(sent, false);
            CompletableFuture.allOf(replies.stream().map(r -> r.toCompletableFuture().exceptionally(x -> null))
                    .toArray(CompletableFuture[]::new)).whenComplete((v, ignored) -> {
                        List<Result> results = new ArrayList<>(lines.size());
                        int n = 0;
                        try {
                            for (Line l : lines) {
                                results.add(l == null ? null : Replies.result(Futures.join(replies.get(n++))));
                            }
                            out.complete(java.util.Collections.unmodifiableList(results));
                        } catch (RuntimeException e) {
                            out.completeExceptionally(Replies.translate(e));
                        }
                    });
        }).exceptionally(err -> {
            out.completeExceptionally(Replies.translate(err));
            return null;
        });
        return out;
    }

    private static List<Result> nulls(int n) {
        List<Result> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(null);
        }
        return out;
    }

    /**
     * {@link #settleAsync(List, List, List)} with the same taken and actual for every limit.
     *
     * @param entries the limits on their keys
     * @param taken   what was taken (of each)
     * @param actual  what was used (of each)
     * @return each limit's five fields after it; null where nothing was sent
     */
    public CompletionStage<List<Result>> settleAsync(List<Entry> entries, long taken, long actual) {
        return settleAsync(entries, same(taken, entries.size()), same(actual, entries.size()));
    }

    private static Line topLine(Integer count) {
        List<byte[]> args = count == null ? List.of() : List.of(b("COUNT"), b(count));
        return new Line("TOP", args, -1, -1);
    }

    /**
     * RL.TOP: the keys refused most often on this node recently, most
     * first (the module's default count, 10). On the Lua backend the script
     * answers {@code ERR RL.TOP needs the module ...}, raised as an
     * {@link ArgumentException}; with the summary off, the module's error.
     * On a cluster, ask each master through its own connection.
     *
     * @return the keys, most refused first
     */
    public List<TopKey> top() {
        return run(topLine(null), Replies::top);
    }

    /**
     * RL.TOP COUNT n.
     *
     * @param count how many keys (1 to the summary's size)
     * @return the keys, most refused first
     */
    public List<TopKey> top(int count) {
        return run(topLine(count), Replies::top);
    }

    /**
     * RL.TOP [COUNT n], asynchronously.
     *
     * @param count how many keys, or null for the module's default
     * @return the keys, most refused first
     */
    public CompletionStage<List<TopKey>> topAsync(Integer count) {
        return runAsync(topLine(count), Replies::top);
    }

    /**
     * A module command line as it is ({@code RL.SLIDE k 10 60}, the name
     * with or without the {@code RL.} prefix, any case) through the
     * backend, answering the module's reply untyped (Long, byte[], List,
     * null); an error reply raises the driver's exception. For tools such
     * as the conformance suite's driver; applications use the typed calls.
     *
     * @param command the command line, its name first
     * @return the reply
     */
    public Object execute(List<byte[]> command) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("a command line needs at least the command name");
        }
        String name = new String(command.get(0), StandardCharsets.UTF_8).toUpperCase(Locale.ROOT);
        if (name.startsWith("RL.")) {
            name = name.substring(3);
        }
        List<byte[]> args = command.subList(1, command.size());
        int from = args.isEmpty() || name.equals("TOP") ? -1 : 0;
        int to = args.isEmpty() || name.equals("TOP") ? -1 : 1;
        if ((name.equals("ALLOW") || name.equals("PEEK")) && !args.isEmpty()) {
            int n;
            try {
                n = Integer.parseInt(new String(args.get(0), StandardCharsets.US_ASCII));
            } catch (NumberFormatException e) {
                n = 0;
            }
            boolean ok = n >= 1 && n <= 16 && args.size() > n;
            from = ok ? 1 : -1;
            to = ok ? 1 + n : -1;
        }
        return backendSync().callSync(name, List.copyOf(args), from, to);
    }

    // -- waiting for a turn (MAXWAIT) ---------------------------------------

    private long maxWaitMillis(Duration maxWait, Instant deadline) {
        long w = maxWait.toMillis();
        if (deadline != null) {
            long left = Math.max(0, deadline.toEpochMilli() - wallMillis.getAsLong());
            w = Math.min(w, left);
        }
        return w;
    }

    private static Line acquireLine(String key, Throttle throttle, long quantity, long maxWaitMs) {
        Throttle t = (Throttle) Millis.of(throttle);
        List<String> options = new ArrayList<>(List.of("MAXWAIT", Long.toString(maxWaitMs)));
        options.addAll(t.commandOptions());
        return single("THROTTLE", key, t.commandArgs(), quantity, true, options);
    }

    private static Line acquireAllLine(List<Entry> entries, long quantity, long maxWaitMs) {
        List<Entry> ms = new ArrayList<>(entries.size());
        for (Entry e : entries) {
            ms.add(Entry.of(e.key(), Millis.of(e.limit())));
        }
        return several("ALLOW", ms, quantity, null, maxWaitMs);
    }

    private static void sleep(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RateLimitException("interrupted while waiting for a turn (it stays booked)", e);
        }
    }

    /**
     * Waits for a turn of {@code throttle} on {@code key} (Guava's
     * {@code acquire}, bucket4j's {@code tryConsume(n, maxWait)}): one
     * {@code RL.THROTTLE ... MS MAXWAIT w} (the limit's times converted to
     * ms); granted, the turn is booked and this sleeps its wait, then
     * returns; refused (no turn within {@code maxWait}, a blocked key, or it
     * can never fit) it throws without sleeping.
     *
     * @param key      the key
     * @param throttle the limit
     * @param maxWait  the longest it may wait
     * @return the grant's fields, in ms ({@code retryAfter}: the wait slept, 0 when none)
     * @throws RateLimitedException when refused, carrying its retry_after (ms)
     */
    public Result acquire(String key, Throttle throttle, Duration maxWait) {
        return acquire(key, throttle, 1, maxWait, null);
    }

    /**
     * {@link #acquire(String, Throttle, Duration)} for {@code quantity}
     * units, never waiting past {@code deadline}: MAXWAIT is
     * {@code min(maxWait, deadline - now)} (0 once the deadline has passed),
     * so a turn that would come later is refused.
     *
     * @param key      the key
     * @param throttle the limit
     * @param quantity the units
     * @param maxWait  the longest it may wait
     * @param deadline the latest it may return, or null
     * @return the grant's fields, in ms
     * @throws RateLimitedException when refused
     */
    public Result acquire(String key, Throttle throttle, long quantity, Duration maxWait, Instant deadline) {
        Result r = run(acquireLine(key, throttle, quantity, maxWaitMillis(maxWait, deadline)), Replies::result);
        if (r.limited()) {
            throw new RateLimitedException(List.of(key), r);
        }
        sleep(r.retryAfter());
        return r;
    }

    /**
     * {@link #acquire(String, Throttle, long, Duration, Instant)}
     * asynchronously: the stage completes after the wait (a delayed
     * executor, no thread blocked), or exceptionally with
     * {@link RateLimitedException}.
     *
     * @param key      the key
     * @param throttle the limit
     * @param quantity the units
     * @param maxWait  the longest it may wait
     * @param deadline the latest it may complete, or null
     * @return the grant's fields, in ms
     */
    public CompletionStage<Result> acquireAsync(String key, Throttle throttle, long quantity, Duration maxWait,
                                                Instant deadline) {
        Line line = acquireLine(key, throttle, quantity, maxWaitMillis(maxWait, deadline));
        return runAsync(line, Replies::result).thenCompose(r -> waited(List.of(key), r, r));
    }

    private static <T> CompletionStage<T> waited(List<String> keys, Result fields, T value) {
        if (fields.limited()) {
            return CompletableFuture.failedFuture(new RateLimitedException(keys, fields));
        }
        if (fields.retryAfter() <= 0) {
            return CompletableFuture.completedFuture(value);
        }
        return CompletableFuture.supplyAsync(() -> value,
                CompletableFuture.delayedExecutor(fields.retryAfter(), TimeUnit.MILLISECONDS));
    }

    /**
     * Waits for a turn of every limit at once: one {@code RL.ALLOW ... MS
     * MAXWAIT w} (every limit THROTTLE, its times converted to ms; the
     * module refuses others), granted only when each limit's wait is at most
     * {@code maxWait}; then sleeps the call's wait (the longest).
     *
     * @param entries  the THROTTLE limits on their keys (one slot on a cluster)
     * @param maxWait  the longest it may wait
     * @param deadline the latest it may return, or null
     * @return the grant (times in ms; {@code retryAfter}: the wait slept)
     * @throws RateLimitedException when refused, carrying the binding limit's fields
     */
    public AllowResult acquireAll(List<Entry> entries, Duration maxWait, Instant deadline) {
        AllowResult r = run(acquireAllLine(entries, -1, maxWaitMillis(maxWait, deadline)), Replies::allowResult);
        if (r.limited()) {
            throw new RateLimitedException(entries.stream().map(Entry::key).toList(), r.asResult());
        }
        sleep(r.retryAfter());
        return r;
    }

    /**
     * {@link #acquireAll(List, Duration, Instant)} without a deadline.
     *
     * @param entries the THROTTLE limits on their keys
     * @param maxWait the longest it may wait
     * @return the grant (times in ms)
     * @throws RateLimitedException when refused
     */
    public AllowResult acquireAll(List<Entry> entries, Duration maxWait) {
        return acquireAll(entries, maxWait, null);
    }

    /**
     * {@link #acquireAll(List, Duration, Instant)}, asynchronously.
     *
     * @param entries  the THROTTLE limits on their keys
     * @param maxWait  the longest it may wait
     * @param deadline the latest it may complete, or null
     * @return the grant, after its wait
     */
    public CompletionStage<AllowResult> acquireAllAsync(List<Entry> entries, Duration maxWait, Instant deadline) {
        Line line;
        try {
            line = acquireAllLine(entries, -1, maxWaitMillis(maxWait, deadline));
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(e);
        }
        List<String> keys = entries.stream().map(Entry::key).toList();
        return runAsync(line, Replies::allowResult).thenCompose(r -> waited(keys, r.asResult(), r));
    }

    // -- leases -----------------------------------------------------------

    /** A fresh lease id: 16 random bytes in hex. */
    public static String newLeaseId() {
        byte[] id = new byte[16];
        RANDOM.nextBytes(id);
        return HexFormat.of().formatHex(id);
    }

    /**
     * Takes a lease of {@code limit} on {@code key}, held until the
     * returned handle is closed: renewed every third of its ttl meanwhile,
     * released exactly once on close (also when the block throws or the
     * thread is interrupted).
     *
     * <pre>{@code
     * try (HeldLease lease = limiter.acquire("exports:{" + tenant + "}", Limit.lease(20, 30))) {
     *     export(tenant);
     * } catch (LeaseRefusedException e) {
     *     // full: e.retryAfter() seconds
     * }
     * }</pre>
     *
     * @param key   the key
     * @param limit the lease limit
     * @return the held lease
     * @throws LeaseRefusedException when the limit is full
     */
    public HeldLease acquire(String key, Lease limit) {
        return acquire(key, limit, 1, newLeaseId(), 1.0 / 3);
    }

    /**
     * {@link #acquire(String, Lease)} with the weight, the id and how often it renews.
     *
     * @param key        the key
     * @param limit      the lease limit
     * @param quantity   the lease's weight
     * @param leaseId    its id
     * @param renewEvery the fraction of the ttl between renewals (0 &lt; f &lt; 1)
     * @return the held lease
     * @throws LeaseRefusedException when the limit is full
     */
    public HeldLease acquire(String key, Lease limit, long quantity, String leaseId, double renewEvery) {
        if (!(renewEvery > 0 && renewEvery < 1)) {
            throw new IllegalArgumentException("renewEvery must be between 0 and 1, not " + renewEvery);
        }
        Result r = take(key, limit, quantity, leaseId);
        if (r.limited()) {
            throw new LeaseRefusedException(key, r.retryAfter());
        }
        return new HeldLease(this, key, limit, quantity, leaseId, r, renewals(), renewEvery);
    }

    private ScheduledExecutorService renewals() {
        ScheduledExecutorService e = renewals;
        if (e == null) {
            synchronized (this) {
                e = renewals;
                if (e == null) {
                    ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(1, task -> {
                        Thread t = new Thread(task, "redis-ratelimit-lease-renewal");
                        t.setDaemon(true);
                        return t;
                    });
                    pool.setRemoveOnCancelPolicy(true);
                    e = pool;
                    renewals = e;
                }
            }
        }
        return e;
    }
}
