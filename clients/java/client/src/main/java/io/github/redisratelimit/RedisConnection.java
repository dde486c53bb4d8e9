package io.github.redisratelimit;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * The one interface over the Redis drivers: {@link LettuceConnection}
 * (standalone and cluster, Spring Data Redis's default) and
 * {@link JedisConnection} (UnifiedJedis: JedisPooled, JedisCluster). Any
 * other driver (Redisson, ...) plugs in by implementing it: a command goes
 * out as its name and its arguments' bytes, the arguments
 * {@code keyFrom..keyTo-1} being keys (a cluster routes by the first), and
 * the reply comes back as {@link Long}, {@code byte[]}, {@link List} of
 * these, {@link java.util.Map} (RESP3) or null; an error reply completes
 * the stage with an exception whose message is the server's text (or that
 * has such an exception as its cause).
 */
public interface RedisConnection {
    /**
     * Sends one command.
     *
     * @param name    the command's name ({@code RL.THROTTLE}, {@code EVALSHA}, ...)
     * @param args    its arguments
     * @param keyFrom the index in {@code args} of the first key, or -1 for none
     * @param keyTo   one past the index of the last key
     * @return the reply
     */
    CompletionStage<Object> send(String name, List<byte[]> args, int keyFrom, int keyTo);

    /**
     * The same, waiting for the reply. The default joins {@link #send};
     * a blocking driver sends directly.
     *
     * @param name    the command's name
     * @param args    its arguments
     * @param keyFrom the index of the first key, or -1
     * @param keyTo   one past the last key
     * @return the reply
     */
    default Object sendSync(String name, List<byte[]> args, int keyFrom, int keyTo) {
        return Futures.join(send(name, args, keyFrom, keyTo));
    }

    /**
     * One command of a pipeline ({@link #sendAll}).
     *
     * @param name    the command's name
     * @param args    its arguments
     * @param keyFrom the index of the first key, or -1
     * @param keyTo   one past the last key
     */
    record Command(String name, List<byte[]> args, int keyFrom, int keyTo) {
        /** Copies the arguments. */
        public Command {
            args = List.copyOf(args);
        }
    }

    /**
     * Sends several commands in one pipeline (written together, the replies
     * read after): one stage per command, in order, each completing with
     * its reply or its error. The default sends each by {@link #send}
     * without waiting in between, which pipelines on a driver that writes
     * asynchronously (Lettuce); a blocking driver overrides it (Jedis: its
     * pipeline).
     *
     * @param commands the commands
     * @return their replies, in order
     */
    default List<CompletionStage<Object>> sendAll(List<Command> commands) {
        List<CompletionStage<Object>> out = new ArrayList<>(commands.size());
        for (Command c : commands) {
            out.add(send(c.name(), c.args(), c.keyFrom(), c.keyTo()));
        }
        return out;
    }

    /**
     * {@link #sendAll}, for a caller that waits: a blocking driver runs the
     * pipeline in the calling thread. The stages may still be pending with
     * a driver that answers asynchronously.
     *
     * @param commands the commands
     * @return their replies, in order
     */
    default List<CompletionStage<Object>> sendAllSync(List<Command> commands) {
        return sendAll(commands);
    }
}
