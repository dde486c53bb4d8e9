// Package redis_rate is a drop-in for github.com/go-redis/redis_rate/v10:
// the same names and types (NewLimiter, Allow, AllowN, AllowAtMost, Reset,
// Limit, PerSecond, PerMinute, PerHour, Result), answered by RL.THROTTLE
// (the module where loaded, else the shared scripts) instead of
// redis_rate's own floating-point script. A user migrates by changing the
// import path:
//
//	import "github.com/redis-ratelimit/redis-ratelimit/clients/go/redisrate"
//
// (the package is named redis_rate, so the calls read as before). Where the
// answers differ from redis_rate's, and why, is in the README's table: in
// short, times are rounded up to the millisecond, a refused AllowN reports
// the units that remain, a request larger than the burst answers
// RetryAfter -1 (it can never fit), and AllowAtMost takes two round trips.
package redis_rate

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
)

// KeyPrefix starts every key. It is not redis_rate's "rate:": those keys
// hold redis_rate's strings, which RL.THROTTLE would refuse (WRONGTYPE).
const KeyPrefix = "rl-rate:"

// Limit is Rate events per Period, in bursts of up to Burst.
type Limit struct {
	Rate   int
	Burst  int
	Period time.Duration
}

func (l Limit) String() string {
	return fmt.Sprintf("%d req/%s (burst %d)", l.Rate, fmtDur(l.Period), l.Burst)
}

// IsZero: the zero Limit.
func (l Limit) IsZero() bool { return l == Limit{} }

func fmtDur(d time.Duration) string {
	switch d {
	case time.Second:
		return "s"
	case time.Minute:
		return "m"
	case time.Hour:
		return "h"
	}
	return d.String()
}

// PerSecond is rate per second, in bursts of rate.
func PerSecond(rate int) Limit { return Limit{Rate: rate, Period: time.Second, Burst: rate} }

// PerMinute is rate per minute, in bursts of rate.
func PerMinute(rate int) Limit { return Limit{Rate: rate, Period: time.Minute, Burst: rate} }

// PerHour is rate per hour, in bursts of rate.
func PerHour(rate int) Limit { return Limit{Rate: rate, Period: time.Hour, Burst: rate} }

// throttle is the limit as RL.THROTTLE's: capacity max_burst+1 = Burst.
func (l Limit) throttle() ratelimit.Throttle {
	return ratelimit.Throttle{MaxBurst: int64(l.Burst) - 1, Count: int64(l.Rate), Period: l.Period}
}

// Limiter controls how frequently events are allowed to happen.
type Limiter struct {
	rl *ratelimit.Limiter
}

// NewLimiter returns a new Limiter over a go-redis v9 client (*redis.Client,
// *redis.ClusterClient, *redis.Ring, or any redis.UniversalClient).
// Options choose the backend, as ratelimit.New's.
func NewLimiter(rdb redis.UniversalClient, opts ...ratelimit.Option) *Limiter {
	return &Limiter{rl: ratelimit.New(rdb, opts...)}
}

// Allow is a shortcut for AllowN(ctx, key, limit, 1).
func (l Limiter) Allow(ctx context.Context, key string, limit Limit) (*Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN reports whether n events may happen at time now.
func (l Limiter) AllowN(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	r, err := l.rl.Throttle(ctx, KeyPrefix+key, limit.throttle(), int64(n))
	if err != nil {
		return nil, err
	}
	return result(limit, r, n), nil
}

// maxAttempts bounds AllowAtMost's tries when other callers take the
// units it saw between its two calls.
const maxAttempts = 3

// AllowAtMost reports whether at most n events may happen at time now. It
// returns number of allowed events that is less than or equal to n. Not
// one atomic step: a peek (quantity 0) learns what remains, then
// RL.THROTTLE takes up to n of it, tried again if others took it meanwhile.
func (l Limiter) AllowAtMost(ctx context.Context, key string, limit Limit, n int) (*Result, error) {
	t := limit.throttle()
	for attempt := 1; ; attempt++ {
		peek, err := l.rl.Throttle(ctx, KeyPrefix+key, t, 0)
		if err != nil {
			return nil, err
		}
		take := min(int64(n), peek.Remaining)
		if take < 1 || n < 1 {
			take = 1 // refused: its retry_after is the wait for one unit
		}
		r, err := l.rl.Throttle(ctx, KeyPrefix+key, t, take)
		if err != nil {
			return nil, err
		}
		if r.Allowed || attempt == maxAttempts || peek.Remaining < 1 {
			return result(limit, r, int(take)), nil
		}
	}
}

// Reset gets a key and reset all limitations and previous usages.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return l.rl.Client().Del(ctx, KeyPrefix+key).Err()
}

func result(limit Limit, r ratelimit.Result, n int) *Result {
	out := &Result{Limit: limit, Remaining: int(r.Remaining), RetryAfter: -1, ResetAfter: r.ResetAfter}
	switch {
	case r.Allowed:
		out.Allowed = n
	case !r.NeverFits:
		out.RetryAfter = r.RetryAfter
	}
	return out
}

// Result is redis_rate's.
type Result struct {
	// Limit is the limit that was used to obtain this result.
	Limit Limit

	// Allowed is the number of events that may happen at time now.
	Allowed int

	// Remaining is the number of events that could still happen now.
	Remaining int

	// RetryAfter is the time until the refused events would be permitted;
	// -1 when allowed, and -1 too when they can never fit (more than Burst).
	RetryAfter time.Duration

	// ResetAfter is the time until the limiter is back to its initial
	// state for the key (rounded up to the millisecond).
	ResetAfter time.Duration
}
