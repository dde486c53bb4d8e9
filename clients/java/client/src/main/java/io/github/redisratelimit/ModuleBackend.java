package io.github.redisratelimit;

import java.util.List;
import java.util.concurrent.CompletionStage;

/** Sends the commands to the loaded module, under its prefix ({@code RL} unless renamed). */
final class ModuleBackend implements Backend {
    private final RedisConnection connection;
    private final String prefix;

    ModuleBackend(RedisConnection connection, String prefix) {
        this.connection = connection;
        this.prefix = prefix + ".";
    }

    @Override
    public String kind() {
        return "module";
    }

    String prefix() {
        return prefix.substring(0, prefix.length() - 1);
    }

    @Override
    public CompletionStage<Object> call(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return connection.send(prefix + name, args, keyFrom, keyTo);
    }

    @Override
    public Object callSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return connection.sendSync(prefix + name, args, keyFrom, keyTo);
    }
}
