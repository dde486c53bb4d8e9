package io.github.redisratelimit.spring;

import io.github.redisratelimit.ArgumentException;
import io.github.redisratelimit.BackendUnavailableException;
import io.github.redisratelimit.WrongTypeException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log of docs/middleware.md: one WARNING line when the limiter starts
 * failing and one when it answers again, however many requests fail
 * between; a configuration error at ERROR once per distinct message (at
 * most 100), never as an outage.
 */
final class FailureLog {
    static final Logger LOG = LoggerFactory.getLogger("io.github.redisratelimit");

    private final boolean failOpen;
    private final AtomicBoolean failing = new AtomicBoolean();
    private final AtomicLong failedCalls = new AtomicLong();
    private volatile long since;
    private final Set<String> configErrors = ConcurrentHashMap.newKeySet();

    FailureLog(boolean failOpen) {
        this.failOpen = failOpen;
    }

    static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** Whether no retry cures it: ERR, WRONGTYPE, NOPERM, CROSSSLOT, NOAUTH, WRONGPASS, the module missing. */
    static boolean isConfigurationError(Throwable t) {
        Throwable u = unwrap(t);
        if (u instanceof ArgumentException || u instanceof WrongTypeException
                || u instanceof BackendUnavailableException || u instanceof IllegalArgumentException) {
            return true;
        }
        for (Throwable c = u; c != null; c = c.getCause() == c ? null : c.getCause()) {
            String m = c.getMessage();
            if (m != null && (m.startsWith("NOPERM") || m.startsWith("CROSSSLOT") || m.startsWith("NOAUTH")
                    || m.startsWith("WRONGPASS"))) {
                return true;
            }
        }
        return false;
    }

    static String cause(Throwable t) {
        Throwable u = unwrap(t);
        if (u instanceof TimeoutException) {
            return "no answer within the timeout";
        }
        String m = u.getMessage();
        return u.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    void outage(Throwable t) {
        failedCalls.incrementAndGet();
        if (failing.compareAndSet(false, true)) {
            since = System.nanoTime();
            LOG.warn("rate limiter unavailable ({}); {}", cause(t), failOpen
                    ? "letting requests through unlimited (fail open) until it answers again"
                    : "answering 503 until it answers again");
        }
    }

    void configuration(Throwable t) {
        String cause = cause(t);
        if (configErrors.size() < 100 && configErrors.add(cause)) {
            LOG.error("rate limiter configuration error ({}): not an outage, the policy or its keys must be fixed; {}",
                    cause, failOpen ? "letting requests through unlimited (fail open) meanwhile"
                            : "answering 500 meanwhile");
        }
    }

    void answered() {
        if (failing.get() && failing.compareAndSet(true, false)) {
            long n = failedCalls.getAndSet(0);
            double s = (System.nanoTime() - since) / 1e9;
            LOG.warn("rate limiter available again, after {} failed calls in {} s", n, String.format("%.1f", s));
        }
    }
}
