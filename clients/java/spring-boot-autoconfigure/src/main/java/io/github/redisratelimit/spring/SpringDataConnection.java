package io.github.redisratelimit.spring;

import io.github.redisratelimit.RedisConnection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * Any RedisConnectionFactory (Jedis's, Redisson's redisson-spring-data, ...)
 * behind {@link RedisConnection}, through Spring Data Redis's
 * {@code execute}: one connection of the factory per call (its pool's), a
 * cluster routed by the first key. It blocks; the asynchronous calls run
 * on {@code executor}. On Lettuce the starter uses {@link io.github.redisratelimit.LettuceConnection} instead.
 */
public final class SpringDataConnection implements RedisConnection {
    private final RedisConnectionFactory factory;
    private final Executor executor;

    /**
     * @param factory  the application's factory
     * @param executor where the asynchronous calls block
     */
    public SpringDataConnection(RedisConnectionFactory factory, Executor executor) {
        this.factory = factory;
        this.executor = executor;
    }

    @Override
    public Object sendSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        byte[][] a = args.toArray(new byte[0][]);
        try (org.springframework.data.redis.connection.RedisConnection c = factory.getConnection()) {
            if (c instanceof RedisClusterConnection cluster && keyFrom >= 0 && keyFrom < keyTo) {
                if (keyFrom != 0) {
                    throw new UnsupportedOperationException("a Spring Data cluster connection routes only commands "
                            + "whose first argument is the key; use Lettuce (Spring Boot's default) on a cluster");
                }
                return cluster.execute(name, a[0], args.subList(1, args.size()));
            }
            return c.execute(name, a);
        }
    }

    @Override
    public CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return CompletableFuture.supplyAsync(() -> sendSync(name, args, keyFrom, keyTo), executor);
    }
}
