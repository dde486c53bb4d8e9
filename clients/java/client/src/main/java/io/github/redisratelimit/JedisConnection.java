package io.github.redisratelimit;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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

    /** Stops this connection's own executor (not the UnifiedJedis, which is the application's). */
    @Override
    public void close() {
        if (ownsExecutor) {
            executor.shutdown();
        }
    }
}
