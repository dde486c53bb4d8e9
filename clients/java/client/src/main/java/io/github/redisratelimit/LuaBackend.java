package io.github.redisratelimit;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * Answers each command by its Lua script, as the module would
 * (CONTRACT.md; clients/lua/README.md). For {@code NAME a1 .. an}: KEYS are
 * a1 ({@code keys: first}) or RL.ALLOW's numkeys keys; ARGV is the head
 * ({@code clock(;zone)*}) and the other arguments; EVALSHA, and EVAL once on
 * NOSCRIPT.
 */
final class LuaBackend implements Backend {
    static final String TIME_REFUSED = "ERR ratelimit: TIME refused in scripts:";
    private static final byte[] TZ = "TZ".getBytes(StandardCharsets.US_ASCII);

    private final RedisConnection connection;
    private final Scripts scripts;
    private final RateLimiter.Clock clock;
    private final ServerClock serverClock;
    private final LongSupplier wallMillis;
    private volatile boolean passClock;

    LuaBackend(RedisConnection connection, RateLimiter.Clock clock, LongSupplier wallMillis, LongSupplier nanoTime) {
        this.connection = connection;
        this.scripts = Scripts.get();
        this.clock = clock;
        this.wallMillis = wallMillis;
        this.serverClock = new ServerClock(connection, nanoTime);
        this.passClock = clock == RateLimiter.Clock.CLIENT;
    }

    @Override
    public String kind() {
        return "lua";
    }

    /** The client passes the time (forced, or since the server refused TIME in a script). */
    boolean passesClock() {
        return passClock;
    }

    private Scripts.Script script(String name) {
        Scripts.Script s = scripts.script("RL." + name);
        if (s == null) {
            throw new BackendUnavailableException("RL." + name + " is not answered by the Lua backend "
                    + "(the scripts cannot keep its state): load the module for it");
        }
        return s;
    }

    /** The number of KEYS of a command line under the manifest's rule. */
    static int keyCount(Scripts.Script s, List<byte[]> args) {
        if (s.none()) {
            return 0;
        }
        if (!s.numkeys()) {
            return args.isEmpty() ? 0 : 1;
        }
        if (args.isEmpty()) {
            return 0;
        }
        String first = new String(args.get(0), StandardCharsets.US_ASCII);
        if (!first.matches("[0-9]{1,2}")) {
            return 0;
        }
        int k = Integer.parseInt(first);
        return k >= 1 && k <= 16 && args.size() - 1 >= k ? k : 0;
    }

    /** The head: {@code clock ( ";" zone )*}. */
    String head(List<byte[]> rest, long clockMicros) {
        StringBuilder b = new StringBuilder();
        if (clockMicros >= 0) {
            b.append(clockMicros);
        }
        Set<String> zones = new LinkedHashSet<>();
        for (int i = 0; i + 1 < rest.size(); i++) {
            byte[] a = rest.get(i);
            if (a.length == 2 && (a[0] | 0x20) == 't' && (a[1] | 0x20) == 'z') {
                zones.add(new String(rest.get(i + 1), StandardCharsets.UTF_8));
            }
        }
        if (!zones.isEmpty()) {
            long nowMillis = clockMicros >= 0 ? clockMicros / 1000 : wallMillis.getAsLong();
            long nowSeconds = Math.floorDiv(nowMillis, 1000);
            for (String z : zones) {
                String seg = Zones.segment(z, nowSeconds);
                if (seg != null) {
                    b.append(';').append(seg);
                }
            }
        }
        return b.toString();
    }

    private List<byte[]> evalArgs(byte[] first, Scripts.Script s, List<byte[]> args, long clockMicros) {
        int k = keyCount(s, args);
        int from = s.numkeys() ? 1 : 0;
        List<byte[]> rest = new ArrayList<>(args.size());
        for (int i = 0; i < args.size(); i++) {
            if (k == 0 || i < from || i >= from + k) {
                rest.add(args.get(i));
            }
        }
        List<byte[]> out = new ArrayList<>(args.size() + 3);
        out.add(first);
        out.add(Integer.toString(k).getBytes(StandardCharsets.US_ASCII));
        for (int i = from; i < from + k; i++) {
            out.add(args.get(i));
        }
        out.add(head(rest, clockMicros).getBytes(StandardCharsets.UTF_8));
        out.addAll(rest);
        return out;
    }

    private static boolean noscript(Throwable t) {
        String text = Replies.errorText(t);
        return text != null && text.startsWith("NOSCRIPT");
    }

    private static boolean timeRefused(Throwable t) {
        String text = Replies.errorText(t);
        return text != null && text.startsWith(TIME_REFUSED);
    }

    private CompletionStage<Object> evaluate(Scripts.Script s, List<byte[]> args, long clockMicros) {
        List<byte[]> bySha = evalArgs(s.sha().getBytes(StandardCharsets.US_ASCII), s, args, clockMicros);
        int k = keyCount(s, args);
        return connection.send("EVALSHA", bySha, k == 0 ? -1 : 2, 2 + k)
                .handle((reply, err) -> {
                    if (err == null) {
                        return CompletableFuture.completedFuture(reply);
                    }
                    if (!noscript(err)) {
                        return CompletableFuture.<Object>failedFuture(Futures.unwrap(err));
                    }
                    List<byte[]> bySource = new ArrayList<>(bySha);
                    bySource.set(0, s.source());
                    return connection.send("EVAL", bySource, k == 0 ? -1 : 2, 2 + k);
                })
                .thenCompose(x -> x);
    }

    @Override
    public CompletionStage<Object> call(String name, List<byte[]> args, int keyFrom, int keyTo) {
        Scripts.Script s;
        try {
            s = script(name);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (passClock) {
            return serverClock.now().thenCompose(now -> evaluate(s, args, now));
        }
        return evaluate(s, args, -1).handle((reply, err) -> {
            if (err == null) {
                return CompletableFuture.completedFuture(reply);
            }
            if (clock == RateLimiter.Clock.AUTO && timeRefused(err)) {
                passClock = true;
                return serverClock.now().thenCompose(now -> evaluate(s, args, now));
            }
            return CompletableFuture.<Object>failedFuture(Futures.unwrap(err));
        }).thenCompose(x -> x);
    }

    @Override
    public Object callSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        Scripts.Script s = script(name);
        if (!passClock) {
            List<byte[]> bySha = evalArgs(s.sha().getBytes(StandardCharsets.US_ASCII), s, args, -1);
            int k = keyCount(s, args);
            try {
                return connection.sendSync("EVALSHA", bySha, k == 0 ? -1 : 2, 2 + k);
            } catch (RuntimeException e) {
                if (noscript(e)) {
                    List<byte[]> bySource = new ArrayList<>(bySha);
                    bySource.set(0, s.source());
                    try {
                        return connection.sendSync("EVAL", bySource, k == 0 ? -1 : 2, 2 + k);
                    } catch (RuntimeException again) {
                        if (!(clock == RateLimiter.Clock.AUTO && timeRefused(again))) {
                            throw again;
                        }
                        passClock = true;
                    }
                } else if (clock == RateLimiter.Clock.AUTO && timeRefused(e)) {
                    passClock = true;
                } else {
                    throw e;
                }
            }
        }
        return Futures.join(call(name, args, keyFrom, keyTo));
    }

    /**
     * The EVALSHAs pipelined; a reply of NOSCRIPT is sent again by EVAL, and
     * one refusing TIME (clock AUTO) switches to the passed clock and sends
     * that call again, each alone.
     */
    @Override
    public List<CompletionStage<Object>> callAll(List<RedisConnection.Command> calls, boolean sync) {
        List<Scripts.Script> found = new ArrayList<>(calls.size());
        try {
            for (RedisConnection.Command c : calls) {
                found.add(script(c.name()));
            }
        } catch (RuntimeException e) {
            List<CompletionStage<Object>> out = new ArrayList<>(calls.size());
            calls.forEach(c -> out.add(CompletableFuture.failedFuture(e)));
            return out;
        }
        boolean passing = passClock;
        if (passing && !sync) {
            CompletableFuture<List<CompletionStage<Object>>> all = serverClock.now()
                    .thenApply(now -> pipelined(calls, found, now, false, true)).toCompletableFuture();
            List<CompletionStage<Object>> out = new ArrayList<>(calls.size());
            for (int i = 0; i < calls.size(); i++) {
                int n = i;
                out.add(all.thenCompose(list -> list.get(n)));
            }
            return out;
        }
        return pipelined(calls, found, passing ? Futures.join(serverClock.now()) : -1, sync, passing);
    }

    private List<CompletionStage<Object>> pipelined(List<RedisConnection.Command> calls, List<Scripts.Script> found,
                                                    long now, boolean sync, boolean passing) {
        List<RedisConnection.Command> evals = new ArrayList<>(calls.size());
        for (int i = 0; i < calls.size(); i++) {
            Scripts.Script s = found.get(i);
            List<byte[]> args = calls.get(i).args();
            int k = keyCount(s, args);
            evals.add(new RedisConnection.Command("EVALSHA",
                    evalArgs(s.sha().getBytes(StandardCharsets.US_ASCII), s, args, now), k == 0 ? -1 : 2, 2 + k));
        }
        List<CompletionStage<Object>> sent = sync ? connection.sendAllSync(evals) : connection.sendAll(evals);
        List<CompletionStage<Object>> out = new ArrayList<>(calls.size());
        for (int i = 0; i < calls.size(); i++) {
            RedisConnection.Command call = calls.get(i);
            RedisConnection.Command eval = evals.get(i);
            Scripts.Script s = found.get(i);
            out.add(sent.get(i).handle((reply, err) -> {
                if (err == null) {
                    return CompletableFuture.completedFuture(reply);
                }
                if (noscript(err)) {
                    List<byte[]> bySource = new ArrayList<>(eval.args());
                    bySource.set(0, s.source());
                    return connection.send("EVAL", bySource, eval.keyFrom(), eval.keyTo())
                            .exceptionallyCompose(again -> retryOnTimeRefused(again, passing, call));
                }
                return retryOnTimeRefused(err, passing, call);
            }).thenCompose(x -> x));
        }
        return out;
    }

    private CompletionStage<Object> retryOnTimeRefused(Throwable err, boolean passing, RedisConnection.Command call) {
        if (!passing && clock == RateLimiter.Clock.AUTO && timeRefused(err)) {
            passClock = true;
            return call(call.name(), call.args(), call.keyFrom(), call.keyTo());
        }
        return CompletableFuture.failedFuture(Futures.unwrap(err));
    }
}
