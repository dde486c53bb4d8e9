package redis_rate_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	upstream "github.com/go-redis/redis_rate/v10"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
	redis_rate "github.com/redis-ratelimit/redis-ratelimit/clients/go/redisrate"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopMatrix()
	os.Exit(code)
}

// answer is a Result of either package.
type answer struct {
	Allowed, Remaining     int
	RetryAfter, ResetAfter time.Duration
	Err                    string
}

func (a answer) String() string {
	if a.Err != "" {
		return "error " + a.Err
	}
	return fmt.Sprintf("allowed %d remaining %d retry %v reset %v", a.Allowed, a.Remaining, a.RetryAfter, a.ResetAfter)
}

// limiter is what the two packages share, answers made comparable.
type limiter struct {
	allowN      func(key string, l upstream.Limit, n int) answer
	allowAtMost func(key string, l upstream.Limit, n int) answer
	reset       func(key string)
}

func ours(l *redis_rate.Limiter) limiter {
	ctx := context.Background()
	conv := func(r *redis_rate.Result, err error) answer {
		if err != nil {
			return answer{Err: err.Error()}
		}
		return answer{r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter, ""}
	}
	lim := func(u upstream.Limit) redis_rate.Limit {
		return redis_rate.Limit{Rate: u.Rate, Burst: u.Burst, Period: u.Period}
	}
	return limiter{
		allowN:      func(k string, u upstream.Limit, n int) answer { return conv(l.AllowN(ctx, k, lim(u), n)) },
		allowAtMost: func(k string, u upstream.Limit, n int) answer { return conv(l.AllowAtMost(ctx, k, lim(u), n)) },
		reset:       func(k string) { _ = l.Reset(ctx, k) },
	}
}

func theirs(l *upstream.Limiter) limiter {
	ctx := context.Background()
	conv := func(r *upstream.Result, err error) answer {
		if err != nil {
			return answer{Err: err.Error()}
		}
		return answer{r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter, ""}
	}
	return limiter{
		allowN:      func(k string, u upstream.Limit, n int) answer { return conv(l.AllowN(ctx, k, u, n)) },
		allowAtMost: func(k string, u upstream.Limit, n int) answer { return conv(l.AllowAtMost(ctx, k, u, n)) },
		reset:       func(k string) { _ = l.Reset(ctx, k) },
	}
}

// The calls, each on its own key, as (call, key, limit, n); every line of
// answers is compared.
type call struct {
	what  string // allowN, allowAtMost, reset
	key   string
	limit upstream.Limit
	n     int
}

var perMinute10 = upstream.PerMinute(10) // T = 6 s, burst 10

var calls = []call{
	// a burst taken one by one, then refused
	{"allowN", "a", perMinute10, 1}, {"allowN", "a", perMinute10, 1}, {"allowN", "a", perMinute10, 8},
	{"allowN", "a", perMinute10, 1},
	// AllowN of more than remains
	{"allowN", "b", perMinute10, 7}, {"allowN", "b", perMinute10, 5},
	// more than the burst: can never fit
	{"allowN", "c", perMinute10, 11},
	// AllowAtMost: takes what remains, then nothing
	{"allowN", "d", perMinute10, 7}, {"allowAtMost", "d", perMinute10, 5}, {"allowAtMost", "d", perMinute10, 5},
	// Reset forgets
	{"reset", "d", perMinute10, 0}, {"allowN", "d", perMinute10, 1},
	// other limits
	{"allowN", "e", upstream.PerSecond(100), 60}, {"allowN", "e", upstream.PerSecond(100), 50},
	{"allowN", "f", upstream.PerHour(3), 1}, {"allowN", "f", upstream.PerHour(3), 3},
	{"allowN", "g", upstream.Limit{Rate: 5, Burst: 2, Period: 10 * time.Second}, 2},
	{"allowN", "g", upstream.Limit{Rate: 5, Burst: 2, Period: 10 * time.Second}, 1},
	// a burst of 0
	{"allowN", "h", upstream.Limit{Rate: 1, Burst: 0, Period: time.Second}, 1},
}

func run(l limiter, prefix string) []answer {
	out := make([]answer, len(calls))
	for i, c := range calls {
		switch c.what {
		case "allowN":
			out[i] = l.allowN(prefix+c.key, c.limit, c.n)
		case "allowAtMost":
			out[i] = l.allowAtMost(prefix+c.key, c.limit, c.n)
		default:
			l.reset(prefix + c.key)
		}
	}
	return out
}

// near: the times of two runs a few milliseconds apart; ours are rounded
// up to the millisecond, theirs are exact floats.
func near(a, b time.Duration) bool {
	d := a - b
	return d < 50*time.Millisecond && d > -50*time.Millisecond
}

// The differences, by call index: what ours answers where redis_rate
// answers otherwise, and why (the README's table lists the same).
var differences = map[int]string{
	// Refused with units left (AllowN(5) with 3 left): redis_rate says 0
	// remain, RL.THROTTLE the units that could still be taken.
	5:  refusedRemaining,
	13: refusedRemaining,
	15: refusedRemaining,
	// 60 of PerSecond(100): 40 remain, but redis_rate's doubles compute
	// (now - (now + 0.6 - 1.0)) / 0.01 as 39.99... or 40.00..., depending
	// on now's rounding, truncated to 39 or 40.
	12: "remaining 40 (redis_rate: 39): exact integer arithmetic",
	// AllowN(11) with a burst of 10: redis_rate answers a wait after which
	// the request is refused again; RL.THROTTLE says it can never fit.
	6: "retry -1 (redis_rate: 6s): it can never fit",
	// A burst of 0: redis_rate refuses every request forever with a retry
	// time; RL.THROTTLE refuses the limit itself.
	18: "an error naming max_burst (redis_rate: refused, retry 1s)",
}

func TestSameCallsAsRedisRate(t *testing.T) {
	for _, s := range redistest.Matrix(t) {
		backends := []ratelimit.Backend{ratelimit.BackendAuto}
		if s.Module {
			backends = append(backends, ratelimit.BackendLua)
		}
		for _, b := range backends {
			t.Run(s.Name()+"/"+b.String(), func(t *testing.T) {
				t.Parallel()
				c := s.Client(t)
				want := run(theirs(upstream.NewLimiter(c)), t.Name()+":")
				got := run(ours(redis_rate.NewLimiter(c, ratelimit.WithBackend(b))), t.Name()+":")
				for i := range calls {
					g, w := got[i], want[i]
					same := g.Err == "" && w.Err == "" && g.Allowed == w.Allowed && g.Remaining == w.Remaining &&
						near(g.RetryAfter, w.RetryAfter) && near(g.ResetAfter, w.ResetAfter)
					why, differs := differences[i]
					switch {
					case calls[i].what == "reset":
					case differs && same && i != 12:
						t.Errorf("call %d %+v: now the same as redis_rate (%v), the README's difference %q is gone", i, calls[i], w, why)
					case differs && !expected(i, g, w):
						t.Errorf("call %d %+v: ours %v, redis_rate %v, want the difference %q", i, calls[i], g, w, why)
					case !differs && !same:
						t.Errorf("call %d %+v: ours %v, redis_rate %v", i, calls[i], g, w)
					}
				}
			})
		}
	}
}

const refusedRemaining = "remaining > 0 when refused (redis_rate: 0): the units that could still be taken"

// expected checks each listed difference as it is described.
func expected(i int, g, w answer) bool {
	switch i {
	case 5, 13, 15:
		return g.Allowed == 0 && w.Allowed == 0 && g.Remaining == map[int]int{5: 3, 13: 40, 15: 2}[i] && w.Remaining == 0 &&
			near(g.RetryAfter, w.RetryAfter) && near(g.ResetAfter, w.ResetAfter)
	case 12:
		return g.Allowed == 60 && w.Allowed == 60 && g.Remaining == 40 && (w.Remaining == 39 || w.Remaining == 40) && near(g.ResetAfter, w.ResetAfter)
	case 6:
		return g.Allowed == 0 && w.Allowed == 0 && g.RetryAfter == -1 && near(w.RetryAfter, 6*time.Second)
	case 18:
		return strings.Contains(g.Err, "max_burst") && w.Allowed == 0 && near(w.RetryAfter, time.Second)
	}
	return false
}
