package io.github.redisratelimit;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * The time a client passes to the scripts where the server refuses TIME
 * inside them (CONTRACT, "Servers that refuse TIME"): the server's clock
 * read outside a script ({@code TIME}; where an ACL refuses it,
 * {@code INFO server}'s {@code server_time_usec}), carried forward on the
 * monotonic clock, re-read every 60 s.
 */
final class ServerClock {
    static final long REREAD_NANOS = 60_000_000_000L;
    private final RedisConnection connection;
    private final LongSupplier nanoTime;
    private volatile long baseMicros;
    private volatile long baseNanos;
    private volatile boolean read;

    ServerClock(RedisConnection connection, LongSupplier nanoTime) {
        this.connection = connection;
        this.nanoTime = nanoTime;
    }

    /** Unix microseconds on the server's clock. */
    CompletionStage<Long> now() {
        long n = nanoTime.getAsLong();
        if (read && n - baseNanos < REREAD_NANOS) {
            return CompletableFuture.completedFuture(baseMicros + (n - baseNanos) / 1000);
        }
        return readServer().thenApply(micros -> {
            baseNanos = nanoTime.getAsLong();
            baseMicros = micros;
            read = true;
            return micros;
        });
    }

    private CompletionStage<Long> readServer() {
        return connection.send("TIME", List.of(), -1, -1)
                .thenApply(reply -> {
                    List<?> t = Replies.array(reply, "TIME's two fields");
                    return Replies.integer(t.get(0)) * 1_000_000 + Replies.integer(t.get(1));
                })
                .exceptionallyCompose(e -> connection.send("INFO", List.of("server".getBytes(StandardCharsets.US_ASCII)), -1, -1)
                        .thenApply(ServerClock::serverTimeUsec));
    }

    private static long serverTimeUsec(Object reply) {
        for (String line : Replies.text(reply).split("\r?\n")) {
            if (line.startsWith("server_time_usec:")) {
                return Long.parseLong(line.substring("server_time_usec:".length()).trim());
            }
        }
        throw new RateLimitException("the server refuses TIME and INFO server has no server_time_usec");
    }
}
