package io.github.redisratelimit;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * What answers the commands: a module command line (the name without its
 * prefix, exactly the module's arguments) in, the module's reply out. The
 * module backend sends it as {@code <PREFIX>.<NAME> args...}; the Lua backend
 * runs its script (CONTRACT: EVALSHA, EVAL on NOSCRIPT).
 */
interface Backend {
    /** {@code module} or {@code lua}. */
    String kind();

    /** The reply to {@code name args...}, keys at {@code keyFrom..keyTo-1} (-1: none). */
    CompletionStage<Object> call(String name, List<byte[]> args, int keyFrom, int keyTo);

    /** The same, waiting. */
    Object callSync(String name, List<byte[]> args, int keyFrom, int keyTo);

    /**
     * Several command lines in one pipeline ({@link RedisConnection#sendAll}),
     * each as {@link #call} answers it; with {@code sync} a blocking driver
     * runs the pipeline in the calling thread.
     */
    List<CompletionStage<Object>> callAll(List<RedisConnection.Command> calls, boolean sync);
}
