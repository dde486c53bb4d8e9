package io.github.redisratelimit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * The Lua backend's scripts, read from the jar: {@code ratelimit.lua} and
 * {@code manifest.json} of clients/lua/dist, put there by the build
 * (clients/lua/README.md describes them). A command's script is its
 * manifest prefix followed by the body; its SHA1 is what EVALSHA sends.
 */
final class Scripts {
    /**
     * One command's script.
     *
     * @param keys the manifest's rule for KEYS: {@code first}, {@code numkeys} or {@code none}
     */
    record Script(String command, byte[] source, String sha, String keys, boolean readonly) {
        boolean numkeys() {
            return "numkeys".equals(keys);
        }

        boolean none() {
            return "none".equals(keys);
        }
    }

    private static final String DIR = "io/github/redisratelimit/lua/";
    private static volatile Scripts loaded;

    private final Map<String, Script> byCommand;

    private Scripts(Map<String, Script> byCommand) {
        this.byCommand = byCommand;
    }

    static Scripts get() {
        Scripts s = loaded;
        if (s == null) {
            synchronized (Scripts.class) {
                s = loaded;
                if (s == null) {
                    s = load();
                    loaded = s;
                }
            }
        }
        return s;
    }

    /** The script of {@code command} (RL.THROTTLE, ...), or null when the scripts do not answer it. */
    Script script(String command) {
        return byCommand.get(command);
    }

    private static byte[] resource(String name) {
        try (InputStream in = Scripts.class.getClassLoader().getResourceAsStream(DIR + name)) {
            if (in == null) {
                throw new BackendUnavailableException("the Lua backend's " + name + " is not in this jar ("
                        + DIR + "): the jar is built from clients/java, whose build takes clients/lua/dist");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new BackendUnavailableException("cannot read the Lua backend's " + name + ": " + e.getMessage());
        }
    }

    private static Scripts load() {
        byte[] body = resource("ratelimit.lua");
        Object manifest = Json.parse(new String(resource("manifest.json"), StandardCharsets.UTF_8));
        if (!(manifest instanceof Map<?, ?> top) || !(top.get("commands") instanceof Map<?, ?> commands)) {
            throw new BackendUnavailableException("manifest.json has no \"commands\" object");
        }
        Map<String, Script> scripts = new HashMap<>();
        MessageDigest sha1;
        try {
            sha1 = MessageDigest.getInstance("SHA-1");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        for (Map.Entry<?, ?> e : commands.entrySet()) {
            String name = String.valueOf(e.getKey()).toUpperCase(java.util.Locale.ROOT);
            if (!(e.getValue() instanceof Map<?, ?> entry)) {
                continue;
            }
            byte[] prefix = String.valueOf(entry.get("prefix")).getBytes(StandardCharsets.UTF_8);
            byte[] source = new byte[prefix.length + body.length];
            System.arraycopy(prefix, 0, source, 0, prefix.length);
            System.arraycopy(body, 0, source, prefix.length, body.length);
            String sha = HexFormat.of().formatHex(sha1.digest(source));
            Object keys = entry.get("keys");
            if (!"first".equals(keys) && !"numkeys".equals(keys) && !"none".equals(keys)) {
                // A rule newer than this client: the command is not answered here.
                continue;
            }
            boolean readonly = Boolean.TRUE.equals(entry.get("readonly"));
            scripts.put(name, new Script(name, source, sha, (String) keys, readonly));
        }
        return new Scripts(Map.copyOf(scripts));
    }
}
