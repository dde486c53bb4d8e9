package io.github.redisratelimit.spring;

import io.github.redisratelimit.LettuceConnection;
import io.github.redisratelimit.RedisConnection;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.codec.ByteArrayCodec;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The starter's connection on Lettuce: one connection of the application's
 * Lettuce client (standalone, sentinel or cluster, from its
 * LettuceConnectionFactory) with byte[] codec, made on first use (again
 * after a failed attempt) and then kept: Lettuce reconnects it by itself.
 * Closed with the application context.
 */
final class LazyLettuceConnection implements RedisConnection, AutoCloseable {
    private final Supplier<AbstractRedisClient> client;
    private volatile LettuceConnection connection;
    private volatile StatefulConnection<byte[], byte[]> stateful;

    LazyLettuceConnection(Supplier<AbstractRedisClient> client) {
        this.client = client;
    }

    private LettuceConnection connection() {
        LettuceConnection c = connection;
        if (c != null) {
            return c;
        }
        synchronized (this) {
            if (connection == null) {
                AbstractRedisClient native_ = client.get();
                if (native_ instanceof RedisClusterClient cluster) {
                    var s = cluster.connect(ByteArrayCodec.INSTANCE);
                    stateful = s;
                    connection = LettuceConnection.of(s);
                } else {
                    var s = ((RedisClient) native_).connect(ByteArrayCodec.INSTANCE);
                    stateful = s;
                    connection = LettuceConnection.of(s);
                }
            }
            return connection;
        }
    }

    @Override
    public CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo) {
        LettuceConnection c;
        try {
            c = connection();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return c.send(name, args, keyFrom, keyTo);
    }

    @Override
    public Object sendSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return connection().sendSync(name, args, keyFrom, keyTo);
    }

    @Override
    public void close() {
        StatefulConnection<byte[], byte[]> s = stateful;
        if (s != null) {
            s.close();
        }
    }
}
