package io.github.redisratelimit;

import java.util.List;

/**
 * RL.ALLOW's and RL.PEEK's reply: the binding limit's five fields, its
 * index (1-based, as the module answers) and each limit's own result.
 *
 * @param limited    the request was refused
 * @param limit      the binding limit's capacity
 * @param remaining  the binding limit's remaining
 * @param retryAfter the binding limit's retry_after
 * @param resetAfter the binding limit's reset_after
 * @param index      the binding limit's index, 1-based
 * @param results    each limit's result, in the order given
 */
public record AllowResult(boolean limited, long limit, long remaining, long retryAfter, long resetAfter,
                          int index, List<Result> results) {
    /** Copies {@code results}. */
    public AllowResult {
        results = List.copyOf(results);
    }

    /** The request was allowed ({@code !limited()}). */
    public boolean allowed() {
        return !limited;
    }

    /** The binding limit's own result ({@code results().get(index() - 1)}). */
    public Result binding() {
        return results.get(index - 1);
    }

    /** The five fields alone. */
    public Result asResult() {
        return new Result(limited, limit, remaining, retryAfter, resetAfter);
    }
}
