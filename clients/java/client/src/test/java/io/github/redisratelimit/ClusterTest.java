package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;

/**
 * A three-master cluster of the first server (with the module), made with
 * redis-cli --cluster create: every call routed to its keys' node, over
 * Lettuce's cluster connection and JedisCluster, module and Lua backends.
 */
class ClusterTest {
    static final List<Servers.Server> NODES = new ArrayList<>();
    static RedisClusterClient lettuce;
    static StatefulRedisClusterConnection<byte[], byte[]> connection;
    static JedisCluster jedis;

    @BeforeAll
    static void cluster() throws Exception {
        String binary = Servers.binaries().get(0);
        List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        for (int i = 0; i < 3; i++) {
            Servers.Server s = Servers.start(binary, true, "--cluster-enabled", "yes", "--cluster-config-file",
                    "nodes-" + System.nanoTime() + ".conf");
            NODES.add(s);
            create.add("127.0.0.1:" + s.port);
        }
        create.add("--cluster-yes");
        Process p;
        try {
            p = new ProcessBuilder(create).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            fail("redis-cli does not run: run `scripts/deps.sh --test` (" + e.getMessage() + ")");
            return;
        }
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), out);
        for (int i = 0; i < 200; i++) {
            if (clusterOk()) {
                break;
            }
            Thread.sleep(50);
        }
        lettuce = RedisClusterClient.create(RedisURI.create("127.0.0.1", NODES.get(0).port));
        connection = lettuce.connect(ByteArrayCodec.INSTANCE);
        jedis = new JedisCluster(new HostAndPort("127.0.0.1", NODES.get(0).port));
    }

    static boolean clusterOk() {
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", NODES.get(0).port)) {
            s.getOutputStream().write("CLUSTER INFO\r\n".getBytes());
            byte[] buf = new byte[4096];
            int n = s.getInputStream().read(buf);
            return new String(buf, 0, Math.max(0, n)).contains("cluster_state:ok");
        } catch (java.io.IOException e) {
            return false;
        }
    }

    @AfterAll
    static void stop() {
        if (jedis != null) {
            jedis.close();
        }
        if (connection != null) {
            connection.close();
            lettuce.shutdown();
        }
        NODES.forEach(s -> s.process.destroyForcibly());
    }

    static void exercise(RateLimiter rl, String tag) {
        // Keys of many slots: each call goes to its own node.
        for (int i = 0; i < 30; i++) {
            String k = "rl:cl:" + tag + ":" + i;
            assertEquals(new Result(false, 3, 2, -1, 60), rl.slide(k, 3, 60), k);
            assertEquals(1, ((KeyState.SlideState) rl.inspect(k).orElseThrow()).units());
        }
        for (int i = 0; i < 10; i++) {
            String t = "{user:" + tag + i + "}";
            AllowResult r = rl.allow(List.of(Entry.of(t + ":s", Limit.throttle(4, 10, 60)),
                    Entry.of(t + ":d", Limit.quota(2, QuotaUnit.DAY).in("Europe/Berlin"))));
            assertFalse(r.limited());
            assertEquals(2, r.index());
            assertTrue(rl.lease(t + ":l", 1, 30, "a").allowed());
            assertTrue(rl.release(t + ":l", "a"));
        }
    }

    @Test
    void lettuceClusterModuleAndLua() {
        exercise(RateLimiter.create(LettuceConnection.of(connection)), "lm");
        RateLimiter lua = RateLimiter.builder(LettuceConnection.of(connection)).backend(RateLimiter.BackendChoice.LUA)
                .build();
        exercise(lua, "ll");
        assertEquals("lua", lua.backendKind());
    }

    @Test
    void jedisClusterModuleAndLua() {
        exercise(RateLimiter.create(JedisConnection.of(jedis)), "jm");
        exercise(RateLimiter.builder(JedisConnection.of(jedis)).backend(RateLimiter.BackendChoice.LUA).build(), "jl");
    }
}
