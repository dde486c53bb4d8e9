package io.github.redisratelimit.spring;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A redis-server for the starter's tests on a free 127.0.0.1 port: the
 * first binary of redis.servers ($REDIS_SERVERS), with the module
 * (rl.module, $RL_MODULE) or without; stopped, paused and resumed by the
 * failure tests. A missing binary or module fails, naming the set-up.
 */
final class TestServer {
    final int port;
    final Process process;

    private TestServer(int port, Process process) {
        this.port = port;
        this.process = process;
    }

    static String binary() {
        String list = System.getProperty("redis.servers");
        if (list == null || list.isBlank()) {
            list = System.getenv("REDIS_SERVERS");
        }
        return list == null || list.isBlank() ? "redis-server" : list.trim().split("\\s+")[0];
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static TestServer start(boolean withModule) {
        return start(withModule, freePort());
    }

    static TestServer start(boolean withModule, int port) {
        List<String> cmd = new ArrayList<>(List.of(binary(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no"));
        try {
            cmd.addAll(List.of("--dir", Files.createTempDirectory("rl-boot-").toString()));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        if (withModule) {
            String m = System.getenv("RL_MODULE");
            if (m == null || m.isBlank()) {
                m = System.getProperty("rl.module");
            }
            if (m == null || !new File(m).isFile()) {
                fail("the module " + m + " is missing: run `cargo build --release` (or set RL_MODULE)");
            }
            cmd.addAll(List.of("--loadmodule", m));
        }
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(Path.of("/dev/null").toFile()).start();
        } catch (IOException e) {
            return fail(binary() + " does not run: run `scripts/deps.sh --test` (" + e.getMessage() + ")");
        }
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        for (int i = 0; i < 500; i++) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.getOutputStream().write("PING\r\n".getBytes());
                if (s.getInputStream().read() == '+') {
                    return new TestServer(port, p);
                }
            } catch (IOException e) {
                // not yet
            }
            if (!p.isAlive()) {
                return fail(binary() + " stopped at start");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return fail(binary() + " did not answer on " + port);
    }

    void signal(String sig) throws Exception {
        new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).start().waitFor();
    }

    void kill() throws Exception {
        process.destroyForcibly().waitFor();
    }
}
