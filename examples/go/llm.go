package main

// The LLM settle flow: a request to a model costs tokens known only when
// it ends. Per user, at most 4 calls at once, 60 calls a minute and 100,000
// tokens a minute, decided in one RL.ALLOW that takes the estimate (UNITS)
// from the token limit; when the call ends, Settle gives back what it did
// not use or charges what went over (one round trip).
//
//	REDIS_ADDR=127.0.0.1:6379 go run . llm [user] [estimate] [actual]

import (
	"context"
	"fmt"
	"time"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
)

// llmRules are a user's: a hash tag keeps the three keys in one slot.
func llmRules(user string, estimate int64) []ratelimit.Rule {
	tag := "rl:{llm:" + user + "}:"
	return []ratelimit.Rule{
		{Name: "inflight", Key: tag + "lease", Limit: ratelimit.Lease{Limit: 4, TTL: 2 * time.Minute}},
		{Name: "rpm", Key: tag + "rpm", Limit: ratelimit.Throttle{MaxBurst: 59, Count: 60, Period: time.Minute}},
		{Name: "tpm", Key: tag + "tpm", Limit: ratelimit.Throttle{MaxBurst: 99999, Count: 100000, Period: time.Minute, Units: ratelimit.Units(estimate)}},
	}
}

// completion is a model call's outcome: the tokens it used.
type completion struct{ tokens int64 }

// callModel takes a turn for user's request estimated at estimate tokens,
// runs model (which answers the tokens it used), then settles the token
// limit with them and releases the lease. A refusal is a *LimitedError
// carrying its wait (a 429 for an HTTP service).
func callModel(ctx context.Context, l *ratelimit.Limiter, user string, estimate int64,
	model func(ctx context.Context) (completion, error)) (completion, *ratelimit.Result, error) {
	rules := llmRules(user, estimate)
	id := ratelimit.NewLeaseID()
	r, err := l.Allow(ctx, rules, ratelimit.AllowOptions{LeaseID: id})
	if err != nil {
		return completion{}, nil, err
	}
	if !r.Allowed {
		return completion{}, nil, &ratelimit.LimitedError{Result: r.Result, RetryAfter: r.RetryAfter}
	}
	defer func() {
		release, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = l.Release(release, rules[0].Key, id)
	}()
	c, err := model(ctx)
	if err != nil {
		// Nothing was generated: give the estimate back.
		c = completion{}
	}
	settled, serr := l.Settle(ctx, rules[2:], estimate, c.tokens)
	if err == nil {
		err = serr
	}
	if len(settled) == 0 {
		return c, nil, err
	}
	return c, settled[0], err
}

func runLLM(ctx context.Context, l *ratelimit.Limiter, user string, estimate, actual int64) error {
	c, settled, err := callModel(ctx, l, user, estimate, func(context.Context) (completion, error) {
		return completion{tokens: actual}, nil
	})
	if err != nil {
		return err
	}
	left := "unchanged"
	if settled != nil {
		left = fmt.Sprintf("%d tokens left this minute", settled.Remaining)
	}
	fmt.Printf("%s: estimated %d tokens, used %d: %s\n", user, estimate, c.tokens, left)
	return nil
}
