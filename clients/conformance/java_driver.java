// The Java package's backends as a conformance backend ("java-lua",
// "java-module"): RateLimiter.execute of the INSTALLED jar (the classpath
// names tmp/m2's redis-ratelimit-client-<version>.jar, never the source
// tree), over Lettuce, driven over JSON lines exactly as node_driver.js.
// One process serves every server of a run (a JVM's start costs seconds;
// the harness compiles this file once into tmp/java/driver and starts it
// once per session):
//
//   java -cp tmp/java/driver:"$(cat tmp/java/conformance.classpath)" java_driver <port | -> [lua | module]
//
// First line out: {"ready": true, "package": <the jar>, "backend": ...}. Then,
// per line in, {"cmd": [arg, ...], "port": <the server's port; default the
// one of the command line>, "now": <Unix seconds, optional>, "clock":
// "server" | "client" (optional)}, an argument a JSON string (UTF-8) or
// {"hex": "..."} (those bytes); one line out: {"reply": value}, every string
// of the reply as {"hex": "..."}, integers, nulls and arrays as they are; or
// {"error": <the error reply's text>}; or {"fatal": <message>}. And
// {"close": <port>} (that server is stopping: its connection is closed, a
// later server on the same port gets a new one) answers {"closed": true}.

import io.github.redisratelimit.LettuceConnection;
import io.github.redisratelimit.RateLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

public class java_driver {
    // The JSON of the protocol: objects of strings, numbers, lists.
    static int i;
    static String s;

    static Object parse(String text) {
        s = text;
        i = 0;
        return value();
    }

    static void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
    }

    static Object value() {
        ws();
        char c = s.charAt(i);
        if (c == '{') {
            Map<String, Object> m = new java.util.LinkedHashMap<>();
            i++;
            ws();
            if (s.charAt(i) == '}') { i++; return m; }
            while (true) {
                ws();
                String k = (String) value();
                ws();
                i++; // :
                m.put(k, value());
                ws();
                if (s.charAt(i++) == '}') return m;
            }
        }
        if (c == '[') {
            List<Object> l = new ArrayList<>();
            i++;
            ws();
            if (s.charAt(i) == ']') { i++; return l; }
            while (true) {
                l.add(value());
                ws();
                if (s.charAt(i++) == ']') return l;
            }
        }
        if (c == '"') {
            StringBuilder b = new StringBuilder();
            i++;
            while (s.charAt(i) != '"') {
                char d = s.charAt(i++);
                if (d == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 't' -> b.append('\t');
                        case 'r' -> b.append('\r');
                        case 'b' -> b.append('\b');
                        case 'f' -> b.append('\f');
                        case 'u' -> { b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; }
                        default -> b.append(e);
                    }
                } else {
                    b.append(d);
                }
            }
            i++;
            return b.toString();
        }
        int start = i;
        while (i < s.length() && "+-0123456789.eEtruefalsn".indexOf(s.charAt(i)) >= 0) i++;
        String t = s.substring(start, i);
        if (t.equals("null")) return null;
        if (t.equals("true")) return Boolean.TRUE;
        if (t.equals("false")) return Boolean.FALSE;
        return Double.parseDouble(t);
    }

    static String quote(String v) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : v.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String encode(Object reply) {
        if (reply == null) return "null";
        if (reply instanceof byte[] b) return "{\"hex\": \"" + HexFormat.of().formatHex(b) + "\"}";
        if (reply instanceof String t) return encode(t.getBytes(StandardCharsets.UTF_8));
        if (reply instanceof List<?> l) {
            List<String> parts = new ArrayList<>();
            for (Object o : l) parts.add(encode(o));
            return "[" + String.join(", ", parts) + "]";
        }
        return String.valueOf(reply);
    }

    static String errorText(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            String n = c.getClass().getName();
            if (n.startsWith("io.lettuce.core.RedisCommandExecutionException") || n.endsWith("RedisNoScriptException")) {
                return c.getMessage();
            }
        }
        return null;
    }

    /** One server's connection and its limiters (one per clock and client-side now, the calendar's "now"). */
    record Server(RedisClient client, StatefulRedisConnection<byte[], byte[]> c, LettuceConnection connection,
                  Map<String, RateLimiter> limiters) {
        static Server connect(int port) {
            RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
            StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
            return new Server(client, c, LettuceConnection.of(c), new ConcurrentHashMap<>());
        }

        void close() {
            c.close();
            client.shutdown(java.time.Duration.ZERO, java.time.Duration.ofSeconds(2));
        }
    }

    public static void main(String[] argv) throws Exception {
        Integer defaultPort = argv[0].equals("-") ? null : Integer.valueOf(argv[0]);
        String backend = argv.length > 1 ? argv[1] : "lua";
        RateLimiter.BackendChoice choice = backend.equals("module") ? RateLimiter.BackendChoice.MODULE
                : RateLimiter.BackendChoice.LUA;
        Map<Integer, Server> servers = new java.util.HashMap<>();
        String jar = RateLimiter.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        System.out.println("{\"ready\": true, \"package\": " + quote(jar) + ", \"backend\": " + quote(backend) + "}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String out;
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> request = (Map<String, Object>) parse(line);
                if (request.get("close") instanceof Double closing) {
                    Server gone = servers.remove(closing.intValue());
                    if (gone != null) gone.close();
                    System.out.println("{\"closed\": true}");
                    System.out.flush();
                    continue;
                }
                Integer port = request.get("port") instanceof Double d ? Integer.valueOf(d.intValue()) : defaultPort;
                if (port == null) throw new IllegalArgumentException("no port: give \"port\" or one on the command line");
                Server server = servers.computeIfAbsent(port, Server::connect);
                List<byte[]> command = new ArrayList<>();
                for (Object a : (List<?>) request.get("cmd")) {
                    if (a instanceof String t) command.add(t.getBytes(StandardCharsets.UTF_8));
                    else command.add(HexFormat.of().parseHex((String) ((Map<?, ?>) a).get("hex")));
                }
                Object now = request.get("now");
                Object clock = request.get("clock");
                String id = now + " " + clock;
                RateLimiter rl = server.limiters().computeIfAbsent(id, k -> {
                    RateLimiter.Builder b = RateLimiter.builder(server.connection()).backend(choice);
                    if (now instanceof Double d) {
                        long ms = (long) Math.floor(d * 1000);
                        b.wallClock(() -> ms);
                    }
                    if ("client".equals(clock)) b.clock(RateLimiter.Clock.CLIENT);
                    if ("server".equals(clock)) b.clock(RateLimiter.Clock.SERVER);
                    return b.build();
                });
                out = "{\"reply\": " + encode(rl.execute(command)) + "}";
            } catch (Throwable e) {
                String text = errorText(e);
                out = text != null ? "{\"error\": " + quote(text) + "}" : "{\"fatal\": " + quote(String.valueOf(e)) + "}";
            }
            System.out.println(out);
            System.out.flush();
        }
        for (Server s : servers.values()) s.close();
    }
}
