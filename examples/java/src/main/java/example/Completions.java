package example;

import io.github.redisratelimit.AllowResult;
import io.github.redisratelimit.Entry;
import io.github.redisratelimit.Lease;
import io.github.redisratelimit.Limit;
import io.github.redisratelimit.RateLimitHeaders;
import io.github.redisratelimit.RateLimiter;
import io.github.redisratelimit.Result;
import io.github.redisratelimit.Slide;
import io.github.redisratelimit.Throttle;
import io.github.redisratelimit.spring.RateLimitedException;
import java.util.List;
import org.springframework.stereotype.Service;

/**
 * An LLM gateway's limits per user, decided in one RL.ALLOW before the
 * model is called: 4 calls in flight (a lease), 60 calls a minute, and
 * 100,000 tokens a minute taken as the call's estimate (UNITS); when the
 * model answers with what it really used, the difference is settled
 * (RL.REFUND of what was not used, RL.CHARGE of what went over) in one
 * round trip, and the lease is released.
 */
@Service
public class Completions {
    static final Lease IN_FLIGHT = Limit.lease(4, 120);
    static final Throttle REQUESTS = Limit.throttle(59, 60, 60);
    static final Slide TOKENS = Limit.slide(100_000, 60);

    /** The model: its estimate of a call's tokens before, what it used after. */
    public interface Model {
        /** @return the tokens a prompt may take at most (its max_tokens) */
        long estimate(String prompt);

        /** @return the completion */
        Reply complete(String prompt);
    }

    /**
     * A completion.
     *
     * @param text   the text
     * @param tokens the tokens it used
     */
    public record Reply(String text, long tokens) {}

    /**
     * What the caller gets.
     *
     * @param text       the completion
     * @param tokens     the tokens it used
     * @param tokensLeft the user's tokens left this minute, after settling
     */
    public record Answer(String text, long tokens, long tokensLeft) {}

    private final RateLimiter limiter;
    private final Model model;

    Completions(RateLimiter limiter, Model model) {
        this.limiter = limiter;
        this.model = model;
    }

    /**
     * @param user   the user
     * @param prompt the prompt
     * @return the completion and the tokens left
     * @throws RateLimitedException when a limit refuses (the starter answers 429 with Retry-After)
     */
    public Answer complete(String user, String prompt) {
        String tag = "rl:{llm:" + user + "}";
        long estimate = model.estimate(prompt);
        Entry tokens = Entry.of(tag + ":tpm", TOKENS);
        List<Entry> limits = List.of(Entry.of(tag + ":lease", IN_FLIGHT), Entry.of(tag + ":rpm", REQUESTS),
                Entry.of(tokens.key(), TOKENS.withUnits(estimate)));
        String leaseId = RateLimiter.newLeaseId();
        AllowResult decision = limiter.allow(limits, 1, leaseId);
        if (decision.limited()) {
            throw new RateLimitedException(decision, RateLimitHeaders.of(decision, List.of(
                    new RateLimitHeaders.Named("in-flight", IN_FLIGHT),
                    new RateLimitHeaders.Named("requests", REQUESTS),
                    new RateLimitHeaders.Named("tokens", TOKENS))));
        }
        try {
            Reply reply = model.complete(prompt);
            Result settled = limiter.settle(List.of(tokens), estimate, reply.tokens()).get(0);
            long left = settled == null ? decision.results().get(2).remaining() : settled.remaining();
            return new Answer(reply.text(), reply.tokens(), left);
        } finally {
            limiter.release(tag + ":lease", leaseId);
        }
    }
}
