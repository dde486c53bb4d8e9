package io.github.redisratelimit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import io.lettuce.core.api.sync.BaseRedisCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Lettuce (standalone or cluster) behind {@link RedisConnection}: the
 * commands go through the connection's {@code dispatch}, keys marked as
 * keys, so a cluster connection routes each call to its slot's node. The
 * connection is the application's: the limiter never closes it.
 *
 * <pre>{@code
 * RedisConnection c = LettuceConnection.of(RedisClient.create("redis://127.0.0.1:6379").connect(ByteArrayCodec.INSTANCE));
 * }</pre>
 */
public final class LettuceConnection implements RedisConnection {
    private final BaseRedisAsyncCommands<byte[], byte[]> async;
    private final BaseRedisCommands<byte[], byte[]> sync;
    private static final ConcurrentHashMap<String, ProtocolKeyword> NAMES = new ConcurrentHashMap<>();

    private LettuceConnection(BaseRedisAsyncCommands<byte[], byte[]> async, BaseRedisCommands<byte[], byte[]> sync) {
        this.async = async;
        this.sync = sync;
    }

    /**
     * @param connection a standalone connection with byte[] keys and values ({@link ByteArrayCodec})
     * @return the connection
     */
    public static LettuceConnection of(StatefulRedisConnection<byte[], byte[]> connection) {
        return new LettuceConnection(connection.async(), connection.sync());
    }

    /**
     * @param connection a cluster connection with byte[] keys and values ({@link ByteArrayCodec})
     * @return the connection
     */
    public static LettuceConnection of(StatefulRedisClusterConnection<byte[], byte[]> connection) {
        return new LettuceConnection(connection.async(), connection.sync());
    }

    /**
     * A new standalone connection of {@code client}, with {@link ByteArrayCodec}.
     *
     * @param client the client
     * @return the connection
     */
    public static LettuceConnection connect(RedisClient client) {
        return of(client.connect(ByteArrayCodec.INSTANCE));
    }

    /**
     * A new cluster connection of {@code client}, with {@link ByteArrayCodec}.
     *
     * @param client the cluster client
     * @return the connection
     */
    public static LettuceConnection connect(RedisClusterClient client) {
        return of(client.connect(ByteArrayCodec.INSTANCE));
    }

    private static ProtocolKeyword keyword(String name) {
        ProtocolKeyword k = NAMES.get(name);
        if (k == null) {
            byte[] raw = name.getBytes(StandardCharsets.US_ASCII);
            k = new ProtocolKeyword() {
                @Override
                public byte[] getBytes() {
                    return raw;
                }

                @Override
                public String toString() {
                    return name;
                }
            };
            NAMES.putIfAbsent(name, k);
        }
        return k;
    }

    private static CommandArgs<byte[], byte[]> args(List<byte[]> args, int keyFrom, int keyTo) {
        CommandArgs<byte[], byte[]> a = new CommandArgs<>(ByteArrayCodec.INSTANCE);
        for (int i = 0; i < args.size(); i++) {
            if (i >= keyFrom && i < keyTo) {
                a.addKey(args.get(i));
            } else {
                a.add(args.get(i));
            }
        }
        return a;
    }

    @Override
    public CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return async.dispatch(keyword(name), new TreeOutput(), args(args, keyFrom, keyTo));
    }

    @Override
    public Object sendSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return sync.dispatch(keyword(name), new TreeOutput(), args(args, keyFrom, keyTo));
    }

    /** Any reply as Long, byte[], List (a RESP3 map flattened to its pairs), Boolean, Double or null. */
    static final class TreeOutput extends CommandOutput<byte[], byte[], Object> {
        private final ArrayDeque<List<Object>> open = new ArrayDeque<>();
        private final ArrayDeque<Integer> want = new ArrayDeque<>();

        TreeOutput() {
            super(ByteArrayCodec.INSTANCE, null);
        }

        private void add(Object value) {
            if (open.isEmpty()) {
                output = value;
                return;
            }
            open.peek().add(value);
            while (!open.isEmpty() && open.peek().size() == want.peek()) {
                List<Object> done = open.pop();
                want.pop();
                if (open.isEmpty()) {
                    output = done;
                } else {
                    open.peek().add(done);
                }
            }
        }

        @Override
        public void set(ByteBuffer bytes) {
            if (bytes == null) {
                add(null);
                return;
            }
            byte[] b = new byte[bytes.remaining()];
            bytes.get(b);
            add(b);
        }

        @Override
        public void set(long integer) {
            add(integer);
        }

        @Override
        public void set(double number) {
            add(number);
        }

        @Override
        public void set(boolean value) {
            add(value);
        }

        @Override
        public void multi(int count) {
            if (count < 0) {
                add(null);
            } else if (count == 0) {
                add(new ArrayList<>(0));
            } else {
                open.push(new ArrayList<>(count));
                want.push(count);
            }
        }
    }
}
