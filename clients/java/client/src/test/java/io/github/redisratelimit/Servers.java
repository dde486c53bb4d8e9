package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.fail;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The servers of the tests: each binary of {@code redis.servers} (a system
 * property the build passes, or $REDIS_SERVERS; space-separated; default
 * redis-server) started on a free 127.0.0.1 port, once with the module
 * ({@code rl.module} or $RL_MODULE) and once without, in this JVM, and
 * stopped when it ends. A missing binary or module fails the test, naming
 * the set-up command.
 */
final class Servers {
    private static final Map<String, Server> STARTED = new HashMap<>();

    private Servers() {}

    static List<String> binaries() {
        String list = System.getProperty("redis.servers");
        if (list == null || list.isBlank()) {
            list = System.getenv("REDIS_SERVERS");
        }
        if (list == null || list.isBlank()) {
            list = "redis-server";
        }
        return Arrays.stream(list.trim().split("\\s+")).toList();
    }

    static String module() {
        String m = System.getenv("RL_MODULE");
        if (m == null || m.isBlank()) {
            m = System.getProperty("rl.module");
        }
        if (m == null || !new File(m).isFile()) {
            fail("the module " + m + " is missing: run `cargo build --release` (or set RL_MODULE)");
        }
        return m;
    }

    /** The first binary's server with the module. */
    static Server first() {
        return get(binaries().get(0), true);
    }

    static synchronized Server get(String binary, boolean withModule, String... extra) {
        String id = binary + " " + withModule + " " + String.join(" ", extra);
        Server s = STARTED.get(id);
        if (s == null || !s.alive()) {
            s = start(binary, withModule, extra);
            STARTED.put(id, s);
        }
        return s;
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static Server start(String binary, boolean withModule, String... extra) {
        int port = freePort();
        Path dir;
        try {
            dir = Files.createTempDirectory("rl-java-");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        List<String> cmd = new ArrayList<>(List.of(binary, "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", dir.toString(), "--daemonize", "no"));
        if (withModule) {
            cmd.add("--loadmodule");
            cmd.add(module());
            cmd.addAll(List.of(extra));
        }
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("server.log").toFile()).start();
        } catch (IOException e) {
            return fail(binary + " does not run (" + e.getMessage()
                    + "): run `scripts/deps.sh --test`, or name the servers in REDIS_SERVERS");
        }
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < until) {
            if (!p.isAlive()) {
                String log = "";
                try {
                    log = Files.readString(dir.resolve("server.log"));
                } catch (IOException ignored) {
                    // the log is only for the message
                }
                return fail(binary + " stopped at start: " + log);
            }
            if ("+PONG".equals(raw(port, "PING"))) {
                return new Server(binary, port, p, withModule);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        p.destroyForcibly();
        return fail(binary + " did not answer PING on port " + port);
    }

    /** One command over a fresh socket, the reply's first line (for the tests' own checks). */
    static String raw(int port, String... args) {
        try (Socket s = new Socket()) {
            s.connect(new java.net.InetSocketAddress("127.0.0.1", port), 500);
            s.setSoTimeout(2000);
            StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                b.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
            }
            OutputStream out = s.getOutputStream();
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder line = new StringBuilder();
            int c;
            while ((c = in.read()) >= 0 && c != '\n') {
                if (c != '\r') {
                    line.append((char) c);
                }
            }
            return line.toString();
        } catch (IOException e) {
            return null;
        }
    }

    /** A started server and a Lettuce connection to it. */
    static final class Server {
        final String binary;
        final int port;
        final Process process;
        final boolean withModule;
        private RedisClient client;
        private StatefulRedisConnection<byte[], byte[]> connection;

        Server(String binary, int port, Process process, boolean withModule) {
            this.binary = binary;
            this.port = port;
            this.process = process;
            this.withModule = withModule;
        }

        boolean alive() {
            return process.isAlive();
        }

        synchronized RedisClient client() {
            if (client == null) {
                RedisURI uri = RedisURI.create("127.0.0.1", port);
                uri.setTimeout(Duration.ofSeconds(5));
                client = RedisClient.create(uri);
            }
            return client;
        }

        synchronized StatefulRedisConnection<byte[], byte[]> lettuce() {
            if (connection == null) {
                connection = client().connect(ByteArrayCodec.INSTANCE);
            }
            return connection;
        }

        String name() {
            return new File(binary).getName() + (withModule ? "+module" : "");
        }

        @Override
        public String toString() {
            return name() + ":" + port;
        }
    }
}
