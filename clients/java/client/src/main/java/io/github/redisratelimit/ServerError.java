package io.github.redisratelimit;

/**
 * An error reply of the server, for connections that are not Lettuce's or
 * Jedis's: a {@link RedisConnection} of another driver completes its stage
 * with one (or with an exception that has one as its cause) so that the
 * server's text is read as such.
 */
public class ServerError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message the server's text ({@code ERR ...}, {@code WRONGTYPE ...}) */
    public ServerError(String message) {
        super(message);
    }
}
