package io.github.redisratelimit.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A route with RequestRateLimiter and our RateLimiter in a test gateway,
 * against a real server with the module and a real backend: two limits in
 * one call (a rate and a lease), 429 with Retry-After, the lease held while
 * the proxied request runs and released when it ends.
 */
@SpringBootTest(classes = GatewayApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class GatewayRouteTest {
    static final TestServer REDIS = TestServer.start(true);
    static final HttpServer BACKEND = backend();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    static HttpServer backend() {
        try {
            HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            s.createContext("/blk", exchange -> {
                exchange.sendResponseHeaders(200, -1);
                exchange.close();
            });
            s.createContext("/shonly", exchange -> {
                exchange.sendResponseHeaders(200, -1);
                exchange.close();
            });
            s.createContext("/sh", exchange -> {
                exchange.sendResponseHeaders(200, -1);
                exchange.close();
            });
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
            s.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
            s.start();
            return s;
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @DynamicPropertySource
    static void props(DynamicPropertyRegistry r) {
        r.add("spring.data.redis.host", () -> "127.0.0.1");
        r.add("spring.data.redis.port", () -> REDIS.port);
        // One source for the route: a list binds from the highest source alone.
        r.add("spring.cloud.gateway.server.webflux.routes[0].id", () -> "api");
        r.add("spring.cloud.gateway.server.webflux.routes[0].predicates[0]", () -> "Path=/api/**");
        r.add("spring.cloud.gateway.server.webflux.routes[0].filters[0].name", () -> "RequestRateLimiter");
        r.add("spring.cloud.gateway.server.webflux.routes[0].filters[0].args.rate-limiter", () -> "#{@redisRateLimitGatewayLimiter}");
        r.add("spring.cloud.gateway.server.webflux.routes[0].filters[0].args.key-resolver", () -> "#{@ipKeyResolver}");
        r.add("spring.cloud.gateway.server.webflux.routes[0].filters[0].args.redis-ratelimit.limits", () -> "SLIDE 3 3600; LEASE 1 30");
        r.add("spring.cloud.gateway.server.webflux.routes[0].filters[0].args.redis-ratelimit.names", () -> "per-hour, in-flight");
        r.add("spring.cloud.gateway.server.webflux.routes[0].uri", () -> "http://127.0.0.1:" + BACKEND.getAddress().getPort());
        route(r, 1, "blk", "SLIDE 1 3600 BLOCK 7200", "per-hour");
        route(r, 2, "sh", "SLIDE 100 60; SLIDE 1 60 SHADOW", "per-minute, candidate");
        route(r, 3, "shonly", "SLIDE 1 60 SHADOW", "candidate");
    }

    static void route(DynamicPropertyRegistry r, int i, String id, String limits, String names) {
        String p = "spring.cloud.gateway.server.webflux.routes[" + i + "].";
        r.add(p + "id", () -> id);
        r.add(p + "predicates[0]", () -> "Path=/" + id + "/**");
        r.add(p + "filters[0].name", () -> "RequestRateLimiter");
        r.add(p + "filters[0].args.rate-limiter", () -> "#{@redisRateLimitGatewayLimiter}");
        r.add(p + "filters[0].args.key-resolver", () -> "#{@ipKeyResolver}");
        r.add(p + "filters[0].args.redis-ratelimit.limits", () -> limits);
        r.add(p + "filters[0].args.redis-ratelimit.names", () -> names);
        r.add(p + "uri", () -> "http://127.0.0.1:" + BACKEND.getAddress().getPort());
    }

    @AfterAll
    static void stop() throws Exception {
        BACKEND.stop(0);
        REDIS.kill();
    }

    @LocalServerPort
    int port;

    HttpRequest get(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build();
    }

    @Test
    void theRouteTakesOurLimitsAndAnswersRetryAfter() throws Exception {
        HttpResponse<String> ok = HTTP.send(get("/api/a"), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, ok.statusCode());
        assertEquals("backend", ok.body());
        assertEquals("\"per-hour\";q=3;w=3600, \"in-flight\";q=1;qu=\"concurrent-requests\"",
                ok.headers().firstValue("RateLimit-Policy").orElseThrow());

        CompletableFuture<HttpResponse<String>> slow = HTTP.sendAsync(get("/api/slow"), HttpResponse.BodyHandlers.ofString());
        Thread.sleep(200);
        HttpResponse<String> busy = HTTP.send(get("/api/a"), HttpResponse.BodyHandlers.ofString());
        assertEquals(429, busy.statusCode(), "the lease is held by /api/slow");
        assertEquals("\"in-flight\";r=0;t=" + busy.headers().firstValue("Retry-After").orElseThrow(),
                busy.headers().firstValue("RateLimit").orElseThrow());
        assertEquals(200, slow.get().statusCode());
        Thread.sleep(100);

        HttpResponse<String> third = HTTP.send(get("/api/a"), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, third.statusCode(), "released when /api/slow ended");
        HttpResponse<String> refused = HTTP.send(get("/api/a"), HttpResponse.BodyHandlers.ofString());
        assertEquals(429, refused.statusCode());
        long retry = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
        assertTrue(retry > 3500 && retry <= 3600, "Retry-After " + retry);
        assertEquals("\"per-hour\";r=0;t=" + retry, refused.headers().firstValue("RateLimit").orElseThrow());
    }

    @Test
    void aBlockAnswersRetryAfterUntilItEnds() throws Exception {
        HttpResponse<String> ok = HTTP.send(get("/blk/a"), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, ok.statusCode());
        HttpResponse<String> blocked = HTTP.send(get("/blk/a"), HttpResponse.BodyHandlers.ofString());
        assertEquals(429, blocked.statusCode());
        assertEquals("7200", blocked.headers().firstValue("Retry-After").orElseThrow(), "the block's end");
    }

    @Test
    void shadowLimitsNeverRefuse() throws Exception {
        for (int i = 0; i < 3; i++) {
            HttpResponse<String> mixed = HTTP.send(get("/sh/a"), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, mixed.statusCode(), "the shadow limit would refuse from the second on");
            assertEquals("\"per-minute\";q=100;w=60", mixed.headers().firstValue("RateLimit-Policy").orElseThrow(),
                    "the shadow limit's fields are not sent");
            HttpResponse<String> shadow = HTTP.send(get("/shonly/a"), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, shadow.statusCode(), "every limit shadow: never refused");
            assertTrue(shadow.headers().firstValue("RateLimit").isEmpty());
        }
    }
}
