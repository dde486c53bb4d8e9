package io.github.redisratelimit;

/** {@code WRONGTYPE}: the key holds another kind of value than the command's. */
public class WrongTypeException extends RateLimitException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message the server's text
     * @param cause   the driver's exception
     */
    public WrongTypeException(String message, Throwable cause) {
        super(message, cause);
    }
}
