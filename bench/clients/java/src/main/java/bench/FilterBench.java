package bench;

import io.github.redisratelimit.Limit;
import io.github.redisratelimit.spring.Policy;
import io.github.redisratelimit.spring.PolicySource;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The servlet filter's cost: a minimal Spring Boot app (GET /hello) under
 * a closed-loop load of HTTP/1.1 clients, in alternating rounds with the
 * limiter's policy (one THROTTLE rule of 1,000,000 a second, which allows every request) and with the empty
 * policy (the filter passes the request untouched, no command). Reports
 * requests per second each way and the RL.ALLOW calls per limited request
 * (INFO commandstats: one round trip per request).
 *
 * <pre>java -cp ... bench.FilterBench REDIS_PORT [rounds] [seconds per round] [clients]</pre>
 */
@SpringBootApplication
public class FilterBench {
    /** The endpoint. */
    @RestController
    public static class Hello {
        /** @return hello */
        @GetMapping("/hello")
        public String hello() {
            return "hello";
        }
    }

    private static long lastCount;

    private static double load(HttpClient http, URI uri, int clients, double seconds) throws Exception {
        AtomicLong done = new AtomicLong();
        long until = System.nanoTime() + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            Thread t = new Thread(() -> {
                HttpRequest r = HttpRequest.newBuilder(uri).build();
                while (System.nanoTime() < until) {
                    try {
                        HttpResponse<String> resp = http.send(r, HttpResponse.BodyHandlers.ofString());
                        if (resp.statusCode() != 200) {
                            throw new IllegalStateException("status " + resp.statusCode());
                        }
                        done.incrementAndGet();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        long start = System.nanoTime();
        for (Thread t : threads) {
            t.join();
        }
        lastCount = done.get();
        return done.get() / ((System.nanoTime() - start) / 1e9);
    }

    private static long allowCalls(int redisPort) throws Exception {
        Process p = new ProcessBuilder("redis-cli", "-p", Integer.toString(redisPort), "INFO", "commandstats").start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor();
        for (String line : out.split("\r?\n")) {
            if (line.startsWith("cmdstat_RL.ALLOW:calls=")) {
                return Long.parseLong(line.substring("cmdstat_RL.ALLOW:calls=".length()).split(",")[0]);
            }
        }
        return 0;
    }

    public static void main(String[] argv) throws Exception {
        int redisPort = Integer.parseInt(argv[0]);
        int rounds = argv.length > 1 ? Integer.parseInt(argv[1]) : 6;
        double seconds = argv.length > 2 ? Double.parseDouble(argv[2]) : 3;
        int clients = argv.length > 3 ? Integer.parseInt(argv[3]) : 8;
        ConfigurableApplicationContext app = new SpringApplication(FilterBench.class).run(
                "--server.port=0", "--spring.data.redis.port=" + redisPort, "--logging.level.root=WARN",
                "--spring.main.banner-mode=off");
        try {
            int port = ((ServletWebServerApplicationContext) app).getWebServer().getPort();
            PolicySource policies = app.getBean(PolicySource.class);
            Policy limited = Policy.of(new Policy.Rule("per-ip", "rl:{bench:$ip}", Limit.throttle(999_999, 1_000_000, 1)));
            HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            URI uri = URI.create("http://127.0.0.1:" + port + "/hello");
            policies.set(limited);
            load(http, uri, clients, 1);
            policies.set(Policy.none());
            load(http, uri, clients, 1);
            double[] with = new double[rounds];
            double[] without = new double[rounds];
            double[] ratio = new double[rounds];
            long allowBefore = allowCalls(redisPort);
            long limitedRequests = 0;
            long requests = 0;
            for (int r = 0; r < rounds; r++) {
                policies.set(Policy.none());
                without[r] = load(http, uri, clients, seconds);
                policies.set(limited);
                long before = allowCalls(redisPort);
                with[r] = load(http, uri, clients, seconds);
                requests += lastCount;
                limitedRequests += allowCalls(redisPort) - before;
                ratio[r] = with[r] / without[r];
            }
            long allowAfter = allowCalls(redisPort);
            Arrays.sort(with);
            Arrays.sort(without);
            Arrays.sort(ratio);
            System.out.printf("GET /hello, %d clients, %d rounds of %.0f s each way%n", clients, rounds, seconds);
            System.out.printf("without the limiter (empty policy): median %.0f req/s%n", without[rounds / 2]);
            System.out.printf("with the limiter (one rule):        median %.0f req/s%n", with[rounds / 2]);
            System.out.printf("with / without, per round: median %.3f, min %.3f, max %.3f%n", ratio[rounds / 2],
                    ratio[0], ratio[rounds - 1]);
            System.out.printf("RL.ALLOW calls during the rounds with the limiter: %d for %d requests (%.3f per request;"
                    + " %d in all rounds)%n", limitedRequests, requests, limitedRequests / (double) requests,
                    allowAfter - allowBefore);
        } finally {
            app.close();
        }
    }
}
