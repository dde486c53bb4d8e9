package example.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The gateway on Boot 4 over a real HTTP port, against a real server with
 * the module and a real backend: both limits of the route in one call, the
 * lease held while the proxied request runs and released when it ends, 429
 * with Retry-After and the RateLimit fields.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class GatewayAppTest {
    static final int REDIS_PORT = freePort();
    static final Process REDIS = start();
    static final HttpServer BACKEND = backend();
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
        try {
            Process p = new ProcessBuilder(binary, "--port", "" + REDIS_PORT, "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--loadmodule", module)
                    .redirectErrorStream(true).redirectOutput(new File("/dev/null")).start();
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

    /** The backend: /api/slow answers after 400 ms, anything else at once. */
    static HttpServer backend() {
        try {
            HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            s.createContext("/api", exchange -> {
                if (exchange.getRequestURI().getPath().equals("/api/slow")) {
                    try {
                        Thread.sleep(400);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                byte[] body = "backend".getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(200, body.length);
                exchange.getResponseBody().write(body);
                exchange.close();
            });
            s.setExecutor(Executors.newCachedThreadPool());
            s.start();
            return s;
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @DynamicPropertySource
    static void props(DynamicPropertyRegistry r) {
        r.add("spring.data.redis.host", () -> "127.0.0.1");
        r.add("spring.data.redis.port", () -> REDIS_PORT);
        r.add("backend.url", () -> "http://127.0.0.1:" + BACKEND.getAddress().getPort());
    }

    @AfterAll
    static void stop() {
        BACKEND.stop(0);
        REDIS.destroyForcibly();
    }

    @Value("${local.server.port}")
    int port;

    HttpResponse<String> get(String path) throws Exception {
        return HTTP.send(request(path), HttpResponse.BodyHandlers.ofString());
    }

    /** A request that fails after 10 s rather than hang the build. */
    HttpRequest request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(10))
                .build();
    }

    @Test
    void theRouteTakesOurLimitsAndAnswersRetryAfter() throws Exception {
        HttpResponse<String> ok = get("/api/a");
        assertEquals(200, ok.statusCode());
        assertEquals("backend", ok.body());
        assertEquals("\"per-hour\";q=3;w=3600, \"in-flight\";q=1;qu=\"concurrent-requests\"",
                ok.headers().firstValue("RateLimit-Policy").orElseThrow());

        CompletableFuture<HttpResponse<String>> slow = HTTP.sendAsync(request("/api/slow"),
                HttpResponse.BodyHandlers.ofString());
        Thread.sleep(200);
        HttpResponse<String> busy = get("/api/a");
        assertEquals(429, busy.statusCode(), "the lease is held by /api/slow");
        assertEquals("\"in-flight\";r=0;t=" + busy.headers().firstValue("Retry-After").orElseThrow(),
                busy.headers().firstValue("RateLimit").orElseThrow());
        assertEquals(200, slow.get().statusCode());
        Thread.sleep(100);

        assertEquals(200, get("/api/a").statusCode(), "released when /api/slow ended");
        HttpResponse<String> refused = get("/api/a");
        assertEquals(429, refused.statusCode(), "three an hour");
        long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry > 3500 && retry <= 3600, "Retry-After " + retry);
        assertEquals("\"per-hour\";r=0;t=" + retry, refused.headers().firstValue("RateLimit").orElseThrow());
        assertEquals(List.of("0"), refused.headers().allValues("X-RateLimit-Remaining"));
    }

    /** The starter's WebFilter on Boot 4's WebFlux (Framework 7's HttpHeaders), beside the gateway. */
    @Test
    void theWebFilterLimitsItsOwnRoute() throws Exception {
        HttpResponse<String> first = get("/local");
        assertEquals(404, first.statusCode(), "allowed by the filter, routed nowhere by the gateway");
        assertEquals("\"local\";q=1;w=60", first.headers().firstValue("RateLimit-Policy").orElseThrow());
        HttpResponse<String> second = get("/local");
        assertEquals(429, second.statusCode(), "one a minute");
        long retry = Long.parseLong(second.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry > 55 && retry <= 60, "Retry-After " + retry);
        assertEquals("\"local\";r=0;t=" + retry, second.headers().firstValue("RateLimit").orElseThrow());
    }
}
