package io.github.redisratelimit;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;

/**
 * Jedis's {@link UnifiedJedis} (JedisPooled, JedisCluster, ...) behind
 * {@link RedisConnection}: a command goes out by {@code sendCommand} with
 * its first key as the sample key that routes it on a cluster. Jedis
 * blocks; the asynchronous calls run on an executor (by default a cached
 * pool of daemon threads of this connection).
 */
public final class JedisConnection implements RedisConnection, AutoCloseable {
    private final UnifiedJedis jedis;
    private final ExecutorService executor;
    private final boolean ownsExecutor;

    private JedisConnection(UnifiedJedis jedis, ExecutorService executor, boolean owns) {
        this.jedis = jedis;
        this.executor = executor;
        this.ownsExecutor = owns;
    }

    /**
     * @param jedis the application's UnifiedJedis (never closed by the limiter)
     * @return the connection
     */
    public static JedisConnection of(UnifiedJedis jedis) {
        ExecutorService pool = Executors.newCachedThreadPool(task -> {
            Thread t = new Thread(task, "redis-ratelimit-jedis");
            t.setDaemon(true);
            return t;
        });
        return new JedisConnection(jedis, pool, true);
    }

    /**
     * @param jedis    the application's UnifiedJedis
     * @param executor where the asynchronous calls block
     * @return the connection
     */
    public static JedisConnection of(UnifiedJedis jedis, ExecutorService executor) {
        return new JedisConnection(jedis, executor, false);
    }

    private record Name(byte[] raw) implements ProtocolCommand {
        @Override
        public byte[] getRaw() {
            return raw;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Name n && Arrays.equals(raw, n.raw);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(raw);
        }

        @Override
        public String toString() {
            return new String(raw, StandardCharsets.US_ASCII);
        }
    }

    @Override
    public Object sendSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        Name command = new Name(name.getBytes(StandardCharsets.US_ASCII));
        byte[][] a = args.toArray(new byte[0][]);
        if (keyFrom >= 0 && keyFrom < keyTo) {
            return jedis.sendCommand(a[keyFrom], command, a);
        }
        return jedis.sendCommand(command, a);
    }

    @Override
    public CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return CompletableFuture.supplyAsync(() -> sendSync(name, args, keyFrom, keyTo), executor);
    }

    /**
     * Jedis's pipeline ({@code UnifiedJedis.pipelined()}: one connection, or
     * a cluster pipeline routing each command by its keys), run in the
     * calling thread; every stage is complete when this returns.
     */
    @Override
    public List<CompletionStage<Object>> sendAllSync(List<Command> commands) {
        List<Response<Object>> responses = new ArrayList<>(commands.size());
        List<CompletionStage<Object>> out = new ArrayList<>(commands.size());
        try (AbstractPipeline pipeline = jedis.pipelined()) {
            for (Command c : commands) {
                CommandArguments a = new CommandArguments(new Name(c.name().getBytes(StandardCharsets.US_ASCII)));
                List<byte[]> args = c.args();
                for (int i = 0; i < args.size(); i++) {
                    if (i >= c.keyFrom() && i < c.keyTo()) {
                        a.key(args.get(i));
                    } else {
                        a.add(args.get(i));
                    }
                }
                responses.add(pipeline.sendCommand(a));
            }
            pipeline.sync();
        } catch (RuntimeException e) {
            for (int i = 0; i < commands.size(); i++) {
                out.add(CompletableFuture.failedFuture(e));
            }
            return out;
        }
        for (Response<Object> r : responses) {
            try {
                out.add(CompletableFuture.completedFuture(r.get()));
            } catch (RuntimeException e) {
                out.add(CompletableFuture.failedFuture(e));
            }
        }
        return out;
    }

    /** {@link #sendAllSync} on the executor. */
    @Override
    public List<CompletionStage<Object>> sendAll(List<Command> commands) {
        CompletableFuture<List<CompletionStage<Object>>> all =
                CompletableFuture.supplyAsync(() -> sendAllSync(commands), executor);
        List<CompletionStage<Object>> out = new ArrayList<>(commands.size());
        for (int i = 0; i < commands.size(); i++) {
            int n = i;
            out.add(all.thenCompose(list -> list.get(n)));
        }
        return out;
    }

    /** Stops this connection's own executor (not the UnifiedJedis, which is the application's). */
    @Override
    public void close() {
        if (ownsExecutor) {
            executor.shutdown();
        }
    }
}
