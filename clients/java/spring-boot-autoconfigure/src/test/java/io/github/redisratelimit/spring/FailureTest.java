package io.github.redisratelimit.spring;

import io.github.redisratelimit.spring.servlet.ServletApp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The filter when Redis fails, over a real HTTP port: hung (SIGSTOP),
 * killed, refusing connections, then back on the same port. Every request
 * is answered 503 within the timeout (300 ms here, counted from arrival;
 * asserted under 1.5 s on this shared machine); one log line when the
 * outage starts, one when it ends.
 */
@SpringBootTest(classes = ServletApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
    "ratelimit.rules[0].name=per-ip",
    "ratelimit.rules[0].key=rl:{ip:$ip}",
    "ratelimit.rules[0].limit=SLIDE 1000 60",
    "ratelimit.filter.timeout=300ms",
    "spring.main.web-application-type=servlet",
    "spring.data.redis.timeout=5s",
})
@ExtendWith(OutputCaptureExtension.class)
class FailureTest {
    static final int REDIS_PORT = TestServer.freePort();
    static TestServer server = TestServer.start(true, REDIS_PORT);
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry r) {
        r.add("spring.data.redis.host", () -> "127.0.0.1");
        r.add("spring.data.redis.port", () -> REDIS_PORT);
    }

    @AfterAll
    static void stop() throws Exception {
        server.kill();
    }

    @LocalServerPort
    int port;

    record Timed(int status, String body, long millis) {}

    Timed get() throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/hello"))
                .build(), HttpResponse.BodyHandlers.ofString());
        return new Timed(r.statusCode(), r.body(), (System.nanoTime() - start) / 1_000_000);
    }

    static int count(String text, String what) {
        Matcher m = Pattern.compile(Pattern.quote(what)).matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    void outage(String how) throws Exception {
        for (int i = 0; i < 4; i++) {
            Timed t = get();
            assertEquals(503, t.status(), how);
            assertEquals("rate limiter unavailable\n", t.body(), how);
            assertTrue(t.millis() < 1500, how + ": answered in " + t.millis() + " ms");
        }
    }

    void backAgain(String how) throws Exception {
        long until = System.nanoTime() + 20_000_000_000L;
        Timed t = get();
        while (t.status() != 200 && System.nanoTime() < until) {
            Thread.sleep(100);
            t = get();
        }
        assertEquals(200, t.status(), how + ": answered again");
    }

    @Test
    void hungKilledAndRefusingAnsweredWithinTheTimeoutOneLineEach(CapturedOutput output) throws Exception {
        assertEquals(200, get().status());

        server.signal("STOP");
        try {
            outage("hung");
        } finally {
            server.signal("CONT");
        }
        backAgain("resumed");
        assertEquals(1, count(output.getOut(), "rate limiter unavailable ("), output.getOut());
        assertEquals(1, count(output.getOut(), "rate limiter available again, after "), output.getOut());

        server.kill();
        outage("killed, the port refusing connections");
        assertEquals(2, count(output.getOut(), "rate limiter unavailable ("), output.getOut());
        server = TestServer.start(true, REDIS_PORT);
        backAgain("restarted on the same port");
        assertEquals(2, count(output.getOut(), "rate limiter available again, after "), output.getOut());
        assertTrue(output.getOut().contains("answering 503 until it answers again"), output.getOut());
    }
}
