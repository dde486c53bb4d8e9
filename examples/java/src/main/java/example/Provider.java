package example;

import io.github.redisratelimit.Limit;
import io.github.redisratelimit.RateLimitedException;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.Throttle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.springframework.stereotype.Service;

/**
 * Pacing calls to a provider that allows 10 requests a second to the whole
 * fleet: every worker, in any process, waits for its turn
 * ({@link RateLimiter#acquire}: one RL.THROTTLE with MAXWAIT, then a sleep
 * until the turn) instead of being refused; a turn further away than
 * {@code maxWait} is refused at once ({@link RateLimitedException}).
 */
@Service
public class Provider {
    static final String KEY = "rl:provider:{acme}";
    static final Throttle FLEET = Limit.throttle(0, 10, 1);

    private final RateLimiter limiter;

    Provider(RateLimiter limiter) {
        this.limiter = limiter;
    }

    /**
     * Calls the provider once per job, each when its turn comes.
     *
     * @param jobs    the jobs
     * @param maxWait the longest a job may wait for its turn
     * @return each job's answer
     * @throws RateLimitedException when a turn is further away than maxWait
     */
    public List<String> callAll(List<String> jobs, Duration maxWait) {
        List<String> out = new ArrayList<>(jobs.size());
        for (String job : jobs) {
            limiter.acquire(KEY, FLEET, maxWait);
            out.add("done " + job);
        }
        return out;
    }
}
