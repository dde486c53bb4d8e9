package bench;

import io.github.redisratelimit.LettuceConnection;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.Result;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The client's cost beside the driver's: RL.THROTTLE as a typed call
 * ({@code limiter.throttle}, the module backend, parsed into a Result)
 * against the same Lettuce connection's raw command (dispatch of the same
 * command line, its reply left as Lettuce's list), one call at a time,
 * in alternating rounds, on one server with the module.
 *
 * <pre>java -cp ... bench.ClientBench PORT [rounds] [calls per round]</pre>
 */
public final class ClientBench {
    private ClientBench() {}

    private static final ProtocolKeyword THROTTLE = new ProtocolKeyword() {
        private final byte[] raw = "RL.THROTTLE".getBytes(StandardCharsets.US_ASCII);

        @Override
        public byte[] getBytes() {
            return raw;
        }

        @Override
        public String toString() {
            return "RL.THROTTLE";
        }
    };

    public static void main(String[] argv) {
        int port = Integer.parseInt(argv[0]);
        int rounds = argv.length > 1 ? Integer.parseInt(argv[1]) : 10;
        int calls = argv.length > 2 ? Integer.parseInt(argv[2]) : 20_000;
        RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
        try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
            RedisCommands<byte[], byte[]> sync = c.sync();
            RateLimiter limiter = RateLimiter.create(LettuceConnection.of(c));
            byte[] key = "rl:bench:k".getBytes(StandardCharsets.US_ASCII);
            byte[][] numbers = {"1000000".getBytes(), "1000000".getBytes(), "1".getBytes()};
            double[] raw = new double[rounds];
            double[] ours = new double[rounds];
            long sink = 0;
            for (int warm = 0; warm < 2; warm++) {
                for (int i = 0; i < calls; i++) {
                    sink += limiter.throttle("rl:bench:k", 1_000_000, 1_000_000, 1).remaining();
                    sink += sync.dispatch(THROTTLE, new NestedMultiOutput<>(ByteArrayCodec.INSTANCE),
                            new CommandArgs<>(ByteArrayCodec.INSTANCE).addKey(key).add(numbers[0]).add(numbers[1])
                                    .add(numbers[2])).size();
                }
            }
            for (int r = 0; r < rounds; r++) {
                long t0 = System.nanoTime();
                for (int i = 0; i < calls; i++) {
                    List<Object> reply = sync.dispatch(THROTTLE, new NestedMultiOutput<>(ByteArrayCodec.INSTANCE),
                            new CommandArgs<>(ByteArrayCodec.INSTANCE).addKey(key).add(numbers[0]).add(numbers[1])
                                    .add(numbers[2]));
                    sink += reply.size();
                }
                long t1 = System.nanoTime();
                for (int i = 0; i < calls; i++) {
                    Result res = limiter.throttle("rl:bench:k", 1_000_000, 1_000_000, 1);
                    sink += res.remaining();
                }
                long t2 = System.nanoTime();
                raw[r] = (t1 - t0) / (double) calls / 1000;
                ours[r] = (t2 - t1) / (double) calls / 1000;
            }
            double[] ratios = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                ratios[r] = ours[r] / raw[r];
            }
            Arrays.sort(raw);
            Arrays.sort(ours);
            Arrays.sort(ratios);
            System.out.printf("RL.THROTTLE, one call at a time, %d rounds of %d calls each way (backend: %s)%n",
                    rounds, calls, limiter.backendKind());
            System.out.printf("raw Lettuce dispatch: median %.1f us per call%n", raw[rounds / 2]);
            System.out.printf("limiter.throttle:     median %.1f us per call%n", ours[rounds / 2]);
            System.out.printf("ratio (typed / raw), per round: median %.3fx, min %.3fx, max %.3fx%n",
                    ratios[rounds / 2], ratios[0], ratios[rounds - 1]);
            if (sink == 42) {
                System.out.println();
            }
        } finally {
            client.shutdown();
        }
    }
}
