package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * The Lua backend's side of CONTRACT.md against a server without the
 * module: NOSCRIPT answered by EVAL, the server's refusal of TIME inside
 * scripts (an ACL user without TIME) switching to the client-passed clock,
 * the module backend forced where there is none.
 */
class LuaBackendTest {
    @Test
    void noscriptIsAnsweredByEvalAndTheModuleCannotBeForced() {
        Servers.Server s = Servers.get(Servers.binaries().get(0), false);
        RateLimiter rl = RateLimiter.create(LettuceConnection.of(s.lettuce()));
        String k = "rl:lua:noscript";
        assertEquals(new Result(false, 3, 2, -1, 60), rl.slide(k, 3, 60));
        s.lettuce().sync().scriptFlush();
        assertEquals(1, rl.slide(k, 3, 60).remaining());
        assertEquals("lua", rl.backendKind());
        RateLimiter forced = RateLimiter.builder(LettuceConnection.of(s.lettuce()))
                .backend(RateLimiter.BackendChoice.MODULE).build();
        BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> forced.slide(k, 3, 60));
        assertTrue(e.getMessage().contains("loadmodule"), e.getMessage());
        // Forced Lua on a server with the module: the scripts answer, in their own storage.
        RateLimiter lua = RateLimiter.builder(LettuceConnection.of(Servers.first().lettuce()))
                .backend(RateLimiter.BackendChoice.LUA).build();
        assertEquals("lua", lua.backendKind());
        assertEquals(2, lua.slide("rl:lua:forced", 3, 60).remaining());
    }

    @Test
    void aServerThatRefusesTimeInScriptsGetsTheClientsClock() {
        Servers.Server s = Servers.get(Servers.binaries().get(0), false);
        s.lettuce().sync().dispatch(io.lettuce.core.protocol.CommandType.ACL,
                new io.lettuce.core.output.StatusOutput<>(ByteArrayCodec.INSTANCE),
                new io.lettuce.core.protocol.CommandArgs<>(ByteArrayCodec.INSTANCE).add("SETUSER").add("notime")
                        .add("on").add(">pw").add("~*").add("+@all").add("-time"));
        RedisURI uri = RedisURI.builder().withHost("127.0.0.1").withPort(s.port)
                .withAuthentication("notime", "pw").build();
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
            List<String> sent = new ArrayList<>();
            RedisConnection lettuce = LettuceConnection.of(c);
            RedisConnection spy = new RedisConnection() {
                @Override
                public CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo) {
                    sent.add(name + (name.startsWith("EVAL") ? " " + new String(args.get(3), StandardCharsets.UTF_8) : ""));
                    return lettuce.send(name, args, keyFrom, keyTo);
                }
            };
            RateLimiter rl = RateLimiter.create(spy);
            Result first = rl.throttle("rl:lua:notime", 4, 10, 60);
            assertEquals(new Result(false, 5, 4, -1, 6), first);
            // The script's refusal, then the server's clock outside scripts (TIME refused too: INFO server).
            assertTrue(sent.contains("TIME") && sent.contains("INFO"), sent.toString());
            String last = sent.get(sent.size() - 1);
            assertTrue(last.matches("EVAL(SHA)? \\d{16}"), "the head passes µs: " + last);
            sent.clear();
            assertEquals(3, rl.throttle("rl:lua:notime", 4, 10, 60).remaining());
            assertEquals(1, sent.size(), "switched for good, clock carried forward: " + sent);
            assertFalse(sent.get(0).endsWith(" "), sent.toString());
        } finally {
            client.shutdown();
        }
    }

    @Test
    void theClockCanBeForced() {
        Servers.Server s = Servers.get(Servers.binaries().get(0), false);
        List<String> heads = new ArrayList<>();
        RedisConnection lettuce = LettuceConnection.of(s.lettuce());
        RedisConnection spy = (name, args, from, to) -> {
            if (name.startsWith("EVAL")) {
                heads.add(new String(args.get(2 + (from < 0 ? 0 : to - from)), StandardCharsets.UTF_8));
            }
            return lettuce.send(name, args, from, to);
        };
        RateLimiter client = RateLimiter.builder(spy).backend(RateLimiter.BackendChoice.LUA)
                .clock(RateLimiter.Clock.CLIENT).build();
        assertEquals(2, client.quota("rl:lua:clock", 3, QuotaUnit.DAY, 1, "Asia/Kolkata", false).remaining());
        assertTrue(heads.get(0).matches("\\d{16};Asia/Kolkata\\|Asia/Kolkata\\|\\d+\\|19800"), heads.get(0));
        heads.clear();
        RateLimiter server = RateLimiter.builder(spy).backend(RateLimiter.BackendChoice.LUA)
                .clock(RateLimiter.Clock.SERVER).build();
        assertEquals(1, server.quota("rl:lua:clock", 3, QuotaUnit.DAY, 1, "UTC", false).remaining(),
                "another zone on the key: never forgets a unit early");
        assertTrue(heads.get(0).startsWith(";UTC|UTC|"), heads.get(0));
    }
}
