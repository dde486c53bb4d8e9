package io.github.redisratelimit;

import java.util.ArrayList;
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

    @Override
    public List<CompletionStage<Object>> callAll(List<RedisConnection.Command> calls, boolean sync) {
        List<RedisConnection.Command> named = new ArrayList<>(calls.size());
        for (RedisConnection.Command c : calls) {
            named.add(new RedisConnection.Command(prefix + c.name(), c.args(), c.keyFrom(), c.keyTo()));
        }
        return sync ? connection.sendAllSync(named) : connection.sendAll(named);
    }
}
