package io.github.redisratelimit;

/** The base class of every exception this package throws. */
public class RateLimitException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with a message.
     *
     * @param message what happened
     */
    public RateLimitException(String message) {
        super(message);
    }

    /**
     * An exception with a message and its cause.
     *
     * @param message what happened
     * @param cause   the driver's exception
     */
    public RateLimitException(String message, Throwable cause) {
        super(message, cause);
    }
}
