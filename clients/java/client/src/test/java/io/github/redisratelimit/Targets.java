package io.github.redisratelimit;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import redis.clients.jedis.JedisPooled;

/**
 * What the integration tests run against: on every server of
 * {@link Servers#binaries()}, the module backend and the Lua backend (a
 * server without the module, chosen by AUTO), each over Lettuce and Jedis.
 */
final class Targets {
    private static final AtomicLong KEYS = new AtomicLong();

    private Targets() {}

    /**
     * One backend on one server through one driver.
     *
     * @param label   what the test report shows
     * @param server  the server
     * @param backend module or lua
     * @param limiter a limiter on it
     */
    record Target(String label, Servers.Server server, String backend, Supplier<RateLimiter> limiter) {
        @Override
        public String toString() {
            return label;
        }

        RateLimiter rl() {
            return limiter.get();
        }

        /** A key no other test uses. */
        String key(String what) {
            return "rl:test:" + what + ":" + KEYS.incrementAndGet();
        }
    }

    static final boolean LUA = Boolean.parseBoolean(System.getProperty("rl.lua", "true"));

    static List<Target> all() {
        List<Target> out = new ArrayList<>();
        for (String binary : Servers.binaries()) {
            out.add(lettuce(Servers.get(binary, true), "module"));
            out.add(jedis(Servers.get(binary, true), "module"));
            if (LUA) {
                out.add(lettuce(Servers.get(binary, false), "lua"));
                out.add(jedis(Servers.get(binary, false), "lua"));
            }
        }
        return out;
    }

    static List<Target> lettuceOnly() {
        return all().stream().filter(t -> t.label().contains("lettuce")).toList();
    }

    private static Target lettuce(Servers.Server s, String backend) {
        RateLimiter rl = RateLimiter.create(LettuceConnection.of(s.lettuce()));
        return new Target(s.name() + " lettuce " + backend, s, backend, () -> rl);
    }

    private static final java.util.Map<Integer, JedisConnection> JEDIS = new java.util.concurrent.ConcurrentHashMap<>();

    private static Target jedis(Servers.Server s, String backend) {
        JedisConnection c = JEDIS.computeIfAbsent(s.port, p -> JedisConnection.of(new JedisPooled("127.0.0.1", p)));
        RateLimiter rl = RateLimiter.create(c);
        return new Target(s.name() + " jedis " + backend, s, backend, () -> rl);
    }
}
