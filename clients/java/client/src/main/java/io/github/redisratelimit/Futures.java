package io.github.redisratelimit;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/** Waiting for a stage, with its cause thrown as it is. */
final class Futures {
    private Futures() {}

    static <T> T join(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RateLimitException("interrupted while waiting for the server", e);
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        } catch (CancellationException e) {
            throw new RateLimitException("the call was cancelled", e);
        }
    }

    /** The cause of a stage's failure, unwrapped. */
    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static RuntimeException rethrow(Throwable t) {
        Throwable u = unwrap(t);
        if (u instanceof RuntimeException r) {
            return r;
        }
        if (u instanceof Error e) {
            throw e;
        }
        return new RateLimitException(String.valueOf(u.getMessage()), u);
    }
}
