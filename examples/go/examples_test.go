package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
)

// Workers sharing a limit through Acquire call at its rate, never faster:
// 12 jobs, 4 workers, 50 a second without burst (a turn every 20 ms), the
// turns asked with a wait of at most 30 ms (so most are refused first).
func TestPacing(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: startRedis(t)})
	defer rdb.Close()
	l := ratelimit.New(rdb)
	limit := ratelimit.Throttle{MaxBurst: 0, Count: 50, Period: time.Second}
	var mu sync.Mutex
	var at []time.Time
	jobs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := pace(ctx, l, "pace", limit, 4, jobs, 30*time.Millisecond, func(context.Context, int) error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return nil
	})
	if err != nil || n != len(jobs) || len(at) != len(jobs) {
		t.Fatalf("pace: %d calls, %v", n, err)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i, x := range at {
		if early := time.Duration(i)*20*time.Millisecond - x.Sub(at[0]); early > 10*time.Millisecond {
			t.Fatalf("call %d came %v before its turn (calls at %v)", i, early, at)
		}
	}
}

// The LLM flow: the estimate taken, the actual tokens settled, the lease
// released; a request that can never fit refused.
func TestLLMSettle(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: startRedis(t)})
	defer rdb.Close()
	l := ratelimit.New(rdb)
	ctx := context.Background()
	used := func(n int64) func(context.Context) (completion, error) {
		return func(context.Context) (completion, error) { return completion{tokens: n}, nil }
	}
	c, settled, err := callModel(ctx, l, "alice", 1500, used(900))
	// 600 given back: 99,100 left, and what a few ms refilled (1.7 a ms).
	if err != nil || c.tokens != 900 || settled == nil || settled.Remaining < 99100 || settled.Remaining > 99300 {
		t.Fatalf("under the estimate: %+v %+v %v", c, settled, err)
	}
	_, settled, err = callModel(ctx, l, "alice", 1500, used(2500))
	if err != nil || settled == nil || settled.Remaining < 96600 || settled.Remaining > 96900 {
		t.Fatalf("over the estimate: %+v %v, want 1,000 charged", settled, err)
	}
	_, settled, err = callModel(ctx, l, "alice", 1500, used(1500))
	if err != nil || settled != nil {
		t.Fatalf("as estimated: %+v %v, want nothing sent", settled, err)
	}
	rules := llmRules("alice", 0)
	in, err := l.Inspect(ctx, rules[0].Key)
	if err != nil || (in != nil && in.Fields["held"] != int64(0)) {
		t.Fatalf("the lease after the calls: %+v %v, want released", in, err)
	}
	if r, err := l.Throttle(ctx, rules[1].Key, rules[1].Limit.(ratelimit.Throttle), 0); err != nil || r.Remaining != 57 {
		t.Fatalf("rpm after 3 calls: %+v %v", r, err)
	}
	_, _, err = callModel(ctx, l, "bob", 200000, used(1))
	var limited *ratelimit.LimitedError
	if !errors.As(err, &limited) || !limited.Result.NeverFits {
		t.Fatalf("an estimate above the capacity: %v, want refused, never fits", err)
	}
}
