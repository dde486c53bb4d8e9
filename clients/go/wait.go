package ratelimit

import (
	"context"
	"time"
)

// Waiting for a turn (RL.THROTTLE and RL.ALLOW with MAXWAIT): the module
// books the turn at once and answers the wait; the caller sleeps it.

// waitFor is maxWait capped by ctx's deadline, in whole milliseconds
// rounded down (so a turn it grants never ends past the deadline), never
// below 0.
func waitFor(ctx context.Context, maxWait time.Duration, now time.Time) time.Duration {
	w := maxWait
	if d, ok := ctx.Deadline(); ok {
		w = min(w, d.Sub(now))
	}
	return max(w, 0).Truncate(time.Millisecond)
}

// sleep waits d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Acquire waits for a turn of one unit of limit on key: RL.THROTTLE with
// MAXWAIT maxWait, capped by ctx's deadline (a turn later than the
// deadline is asked with the smaller wait, so the module refuses it).
// Granted, it sleeps until the turn (a timer, or until ctx ends) and
// answers the result (RetryAfter = the wait it slept). Refused, it answers
// a *LimitedError (errors.Is(err, ErrLimited)) carrying RetryAfter, and
// nothing was recorded. When ctx ends during the wait it answers ctx's
// error and gives the booked unit back (RL.REFUND, in the background).
//
// Workers sharing one limit this way (500 calls a minute to a provider)
// stay within its rate and burst: see examples/go.
func (l *Limiter) Acquire(ctx context.Context, key string, limit Throttle, maxWait time.Duration) (Result, error) {
	w, err := millis("max_wait", waitFor(ctx, maxWait, time.Now()))
	if err != nil {
		return Result{}, err
	}
	a, err := single(key, limit, 1, "MAXWAIT", w)
	if err != nil {
		return Result{}, err
	}
	r, err := l.five(ctx, "THROTTLE", a)
	if err != nil {
		return Result{}, err
	}
	if !r.Allowed {
		return r, &LimitedError{Result: r, RetryAfter: r.RetryAfter}
	}
	if err := sleep(ctx, r.RetryAfter); err != nil {
		go l.giveBack([]Rule{{Key: key, Limit: limit}}, 1)
		return r, err
	}
	return r, nil
}

// AcquireAll is Acquire over several limits at once (RL.ALLOW with
// MAXWAIT; every rule a Throttle): the turn is granted when every limit's
// wait is at most maxWait (capped by ctx's deadline), and the wait is the
// longest of them. Quantity is what each rule costs (0 means 1).
func (l *Limiter) AcquireAll(ctx context.Context, rules []Rule, quantity int64, maxWait time.Duration) (AllowResult, error) {
	w := waitFor(ctx, maxWait, time.Now())
	r, err := l.Allow(ctx, rules, AllowOptions{Quantity: quantity, MaxWait: &w})
	if err != nil {
		return AllowResult{}, err
	}
	if !r.Allowed {
		return r, &LimitedError{Result: r.Result, RetryAfter: r.RetryAfter}
	}
	if err := sleep(ctx, r.RetryAfter); err != nil {
		go l.giveBack(rules, max(quantity, 1))
		return r, err
	}
	return r, nil
}

// giveBack refunds a booked turn nobody waited for.
func (l *Limiter) giveBack(rules []Rule, quantity int64) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	calls := make([]Call, 0, len(rules))
	for _, r := range rules {
		a, err := giveLine(r.Key, r.Limit, quantity)
		if err == nil {
			calls = append(calls, Call{Name: "REFUND", Args: a[1:]})
		}
	}
	_, _ = l.DoAll(ctx, calls)
}
