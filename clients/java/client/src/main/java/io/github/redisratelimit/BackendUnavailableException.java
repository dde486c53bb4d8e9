package io.github.redisratelimit;

/** No backend answers: the module is not loaded and the Lua backend was not allowed, or a command the scripts do not answer. */
public class BackendUnavailableException extends RateLimitException {
    private static final long serialVersionUID = 1L;

    /** @param message what is missing and what to do */
    public BackendUnavailableException(String message) {
        super(message);
    }
}
