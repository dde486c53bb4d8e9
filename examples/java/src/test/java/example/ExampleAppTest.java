package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The example over a real HTTP port against a real server with the module.
 * Boot's tests turn metrics exporters off by default; the Prometheus one is
 * turned back on by its property (the same name on Boot 3.5 and 4.0).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "management.prometheus.metrics.export.enabled=true")
class ExampleAppTest {
    static final int REDIS_PORT = freePort();
    static final Process REDIS = start();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static Process start() {
        String servers = System.getProperty("redis.servers", "redis-server").trim();
        String binary = servers.isEmpty() ? "redis-server" : servers.split("\\s+")[0];
        String module = System.getenv().getOrDefault("RL_MODULE", System.getProperty("rl.module"));
        if (module == null || !new File(module).isFile()) {
            fail("the module " + module + " is missing: run `cargo build --release` (or set RL_MODULE)");
        }
        List<String> cmd = new ArrayList<>(List.of(binary, "--port", "" + REDIS_PORT, "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--loadmodule", module));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(new File("/dev/null")).start();
            Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
            for (int i = 0; i < 500; i++) {
                try {
                    new Socket("127.0.0.1", REDIS_PORT).close();
                    return p;
                } catch (Exception e) {
                    Thread.sleep(20);
                }
            }
        } catch (Exception e) {
            fail(binary + " does not run: run `scripts/deps.sh --test` (" + e.getMessage() + ")");
        }
        return fail(binary + " did not start");
    }

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry r) {
        r.add("spring.data.redis.host", () -> "127.0.0.1");
        r.add("spring.data.redis.port", () -> REDIS_PORT);
    }

    @AfterAll
    static void stop() {
        REDIS.destroyForcibly();
    }

    @LocalServerPort
    int port;

    HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpRequest.Builder at(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10));
    }

    @Test
    void theCodeEndpointIsLimitedPerAddress() throws Exception {
        HttpRequest.Builder code = at("/codes?email=ada@example.com").POST(HttpRequest.BodyPublishers.noBody());
        HttpResponse<String> sent = send(code);
        assertEquals(200, sent.statusCode());
        assertEquals("code sent to ada@example.com\n", sent.body());
        HttpResponse<String> again = send(code);
        assertEquals(429, again.statusCode(), "one a minute per address");
        long retry = Long.parseLong(again.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry > 55 && retry <= 60, "Retry-After " + retry);
        assertEquals("\"code-per-minute\";r=0;t=" + retry, again.headers().firstValue("RateLimit").orElseThrow());
        assertEquals(200, send(at("/codes?email=bob@example.com").POST(HttpRequest.BodyPublishers.noBody())).statusCode());
    }

    @Test
    void theApiIsLimitedPerUserAndPerAddress() throws Exception {
        for (int i = 4; i >= 0; i--) {
            HttpResponse<String> ok = send(at("/api/items").header("Authorization", "Bearer ada"));
            assertEquals(200, ok.statusCode());
            assertEquals("\"per-user\";q=5;w=60, \"per-address\";q=10;w=60",
                    ok.headers().firstValue("RateLimit-Policy").orElseThrow());
        }
        HttpResponse<String> ada = send(at("/api/items").header("Authorization", "Bearer ada"));
        assertEquals(429, ada.statusCode(), "ada's five a minute are spent");
        assertTrue(ada.headers().firstValue("RateLimit").orElseThrow().startsWith("\"per-user\";r=0;"));
        // Another user from the same address: the address has 10 a minute, 5 spent by ada.
        for (int i = 0; i < 4; i++) {
            assertEquals(200, send(at("/api/items").header("Authorization", "Bearer bob")).statusCode());
        }
        HttpResponse<String> bob = send(at("/api/items").header("Authorization", "Bearer bob"));
        assertEquals(200, bob.statusCode());
        assertEquals("0", bob.headers().firstValue("X-RateLimit-Remaining").orElseThrow());
        HttpResponse<String> address = send(at("/api/items").header("Authorization", "Bearer carol"));
        assertEquals(429, address.statusCode(), "the address's ten are spent");
        assertTrue(address.headers().firstValue("RateLimit").orElseThrow().startsWith("\"per-address\";r=0;"));
        assertEquals(200, send(at("/actuator/health")).statusCode(), "skipped");
        HttpResponse<String> meters = send(at("/actuator/metrics/ratelimit.decisions"));
        assertEquals(200, meters.statusCode());
        assertTrue(meters.body().contains("\"ratelimit.rule\""), meters.body());
        prometheusShowsTheNamesOfDocsMetrics();
    }

    /**
     * The scrape of /actuator/prometheus, as series (name and labels, as
     * written) to values; the names are docs/metrics.md's.
     */
    Map<String, Double> scrape() throws Exception {
        HttpResponse<String> r = send(at("/actuator/prometheus"));
        assertEquals(200, r.statusCode(), r.body());
        Map<String, Double> series = new HashMap<>();
        for (String line : r.body().split("\n")) {
            int space = line.lastIndexOf(' ');
            if (!line.startsWith("#") && space > 0) {
                series.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
            }
        }
        return series;
    }

    /** What theApiIsLimitedPerUserAndPerAddress did, in Prometheus's names (the only test of these rules). */
    void prometheusShowsTheNamesOfDocsMetrics() throws Exception {
        Map<String, Double> s = scrape();
        // ada's sixth request refused by per-user, carol's by per-address.
        assertEquals(1.0, s.get("ratelimit_decisions_total{ratelimit_result=\"limited\",ratelimit_rule=\"per-user\"}"),
                () -> "" + s.keySet());
        assertEquals(1.0, s.get("ratelimit_decisions_total{ratelimit_result=\"limited\",ratelimit_rule=\"per-address\"}"));
        // ada 5, bob 5 and carol's per-user; ada 5, bob 5 and ada's sixth per-address.
        assertEquals(11.0, s.get("ratelimit_decisions_total{ratelimit_result=\"allowed\",ratelimit_rule=\"per-user\"}"));
        assertEquals(11.0, s.get("ratelimit_decisions_total{ratelimit_result=\"allowed\",ratelimit_rule=\"per-address\"}"));
        // The timer is shared with @RateLimit, whose tests may have run first: at least the filter's.
        Double limited = s.get("ratelimit_decision_duration_seconds_count{ratelimit_result=\"limited\"}");
        assertTrue(limited != null && limited >= 2, "limited decisions timed: " + limited);
        Double allowed = s.get("ratelimit_decision_duration_seconds_count{ratelimit_result=\"allowed\"}");
        assertTrue(allowed != null && allowed >= 10, "allowed decisions timed: " + allowed);
        assertTrue(s.get("ratelimit_decision_duration_seconds_sum{ratelimit_result=\"allowed\"}") > 0);
        assertTrue(s.containsKey("ratelimit_decision_duration_seconds_max{ratelimit_result=\"allowed\"}"));
        // The buckets docs/metrics.md advises, in seconds, and +Inf counting every decision.
        for (String le : List.of("1.0E-4", "0.001", "0.25", "1.0")) {
            assertTrue(s.containsKey("ratelimit_decision_duration_seconds_bucket{ratelimit_result=\"allowed\",le=\""
                    + le + "\"}"), () -> "le=" + le + " in " + s.keySet());
        }
        assertEquals(allowed, s.get("ratelimit_decision_duration_seconds_bucket{ratelimit_result=\"allowed\",le=\"+Inf\"}"));
    }

    @Autowired
    Provider provider;

    HttpResponse<String> llm(String user, int words) throws Exception {
        String prompt = String.join("+", java.util.Collections.nCopies(words, "word"));
        return send(at("/llm?user=" + user + "&prompt=" + prompt).POST(HttpRequest.BodyPublishers.noBody()));
    }

    @Test
    void theLlmEndpointTakesAnEstimateAndSettlesWhatWasUsed() throws Exception {
        HttpResponse<String> first = llm("ada", 9);
        assertEquals(200, first.statusCode());
        assertTrue(first.body().endsWith("(900 tokens; 99100 left this minute)\n"), first.body());
        // More than the estimate of 1,500: the 500 over are charged.
        HttpResponse<String> second = llm("ada", 20);
        assertTrue(second.body().endsWith("(2000 tokens; 97100 left this minute)\n"), second.body());
        // 97,100 used at once: the key is in debt, the next estimate is refused.
        HttpResponse<String> huge = llm("ada", 971);
        assertTrue(huge.body().endsWith("(97100 tokens; 0 left this minute)\n"), huge.body());
        HttpResponse<String> refused = llm("ada", 1);
        assertEquals(429, refused.statusCode());
        assertTrue(refused.headers().firstValue("RateLimit").orElseThrow().startsWith("\"tokens\";r=0;"));
        long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry > 0 && retry <= 60, "Retry-After " + retry);
        assertEquals(200, llm("bob", 1).statusCode(), "another user has his own limits");
    }

    @Test
    void workersArePacedToTheProvidersRate() {
        long start = System.nanoTime();
        List<String> done = provider.callAll(List.of("a", "b", "c", "d", "e", "f"), Duration.ofSeconds(2));
        long ms = Duration.ofNanos(System.nanoTime() - start).toMillis();
        assertEquals(List.of("done a", "done b", "done c", "done d", "done e", "done f"), done);
        assertTrue(ms >= 500, "six turns 100 ms apart take 500 ms at least, took " + ms);
        // The next turn is about 100 ms away: with no wait allowed it is refused at once.
        io.github.redisratelimit.RateLimitedException refused = assertThrows(
                io.github.redisratelimit.RateLimitedException.class,
                () -> provider.callAll(List.of("g"), Duration.ZERO));
        assertTrue(refused.retryAfter() > 0 && refused.retryAfter() <= 100, refused.getMessage());
    }
}
