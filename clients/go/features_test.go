package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

// Round 5's features on every server and backend: RL.CHARGE and Settle,
// BLOCK, UNITS and SHADOW, MAXWAIT's Acquire and AcquireAll, RL.TOP.

func TestChargeAndSettle(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		tpm := ratelimit.Slide{Limit: 100, Window: time.Minute}
		r := must(l.Charge(ctx, key(t, "c"), tpm, 130))(t)
		if r.Allowed || r.Remaining != 0 || r.Limit != 100 || r.RetryAfter <= 59*time.Second {
			t.Fatalf("Charge of 130 of 100: %+v, want in debt: 0 remaining, limited for a minute", r)
		}
		if r := must(l.Slide(ctx, key(t, "c"), tpm, 1))(t); r.Allowed {
			t.Fatalf("a request in debt: %+v, want refused", r)
		}
		// The LLM flow: estimate 40 tokens with UNITS in one RL.ALLOW, then
		// settle each rule with what it cost.
		rules := []ratelimit.Rule{
			{Name: "rpm", Key: key(t, "rpm"), Limit: ratelimit.Throttle{MaxBurst: 59, Count: 60, Period: time.Minute}},
			{Name: "tpm", Key: key(t, "tpm"), Limit: ratelimit.Throttle{MaxBurst: 999, Count: 1000, Period: time.Minute, Units: ratelimit.Units(40)}},
		}
		a := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t)
		// (1,000 tokens a minute come back at one per 60 ms: a loaded
		// machine may see one or two between calls.)
		near := func(got, want int64) bool { return got >= want && got <= want+3 }
		if !a.Allowed || a.Results[0].Remaining != 59 || !near(a.Results[1].Remaining, 960) {
			t.Fatalf("Allow with UNITS 40: %+v", a)
		}
		got := must(l.SettleEach(ctx, rules, []int64{1, 40}, []int64{1, 25}))(t)
		if len(got) != 2 || got[0] != nil || got[1] == nil || !near(got[1].Remaining, 975) {
			t.Fatalf("SettleEach (1, 40) -> (1, 25): %v, want nothing for rpm, 975 left of tpm", got)
		}
		got = must(l.Settle(ctx, rules[1:], 25, 75))(t)
		if len(got) != 1 || got[0] == nil || !near(got[0].Remaining, 925) {
			t.Fatalf("Settle 25 -> 75: %v, want a charge of 50: 925 left", got)
		}
		// One bad entry is its error; the others are still sent.
		bad := []ratelimit.Rule{{Key: key(t, "lease"), Limit: ratelimit.Lease{Limit: 1, TTL: time.Second}}, rules[1]}
		got, err := l.Settle(ctx, bad, 10, 0)
		var ce *ratelimit.CommandError
		if !errors.As(err, &ce) || ce.Command != "RL.REFUND" || got[0] != nil || got[1] == nil || !near(got[1].Remaining, 935) {
			t.Fatalf("Settle with a LEASE: %v %v, want the LEASE's CommandError and the other refunded", got, err)
		}
		if _, err := l.SettleEach(ctx, rules, []int64{1}, []int64{1, 2}); err == nil {
			t.Fatal("SettleEach with one taken for two rules was taken")
		}
	})
}

func TestBlock(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		login := ratelimit.Slide{Limit: 2, Window: time.Second, Block: time.Hour}
		for range 2 {
			must(l.Slide(ctx, key(t, "b"), login, 1))(t)
		}
		r := must(l.Slide(ctx, key(t, "b"), login, 1))(t)
		if r.Allowed || r.RetryAfter <= 59*time.Minute || r.RetryAfter > time.Hour || r.ResetAfter < r.RetryAfter {
			t.Fatalf("the refusal that blocks: %+v, want retry in about an hour", r)
		}
		// Blocked, whatever the call says: without BLOCK, through RL.ALLOW.
		r = must(l.Slide(ctx, key(t, "b"), ratelimit.Slide{Limit: 2, Window: time.Second}, 1))(t)
		if r.Allowed || r.RetryAfter <= 59*time.Minute {
			t.Fatalf("a blocked key: %+v", r)
		}
		in := must(l.Inspect(ctx, key(t, "b")))(t)
		if until, ok := in.Fields["blocked_until"].(int64); !ok || until < time.Now().Add(59*time.Minute).UnixMilli() {
			t.Fatalf("RL.INSPECT of a blocked key: %v, want blocked_until about an hour ahead", in.Fields)
		}
		_, err := l.Allow(ctx, []ratelimit.Rule{{Key: key(t, "l"), Limit: ratelimit.Lease{Limit: 1, TTL: time.Second}}}, ratelimit.AllowOptions{LeaseID: "x"})
		if err != nil {
			t.Fatalf("a LEASE spec without BLOCK: %v", err)
		}
		_, err = l.Throttle(ctx, key(t, "t"), ratelimit.Throttle{MaxBurst: 1, Count: 1, Period: time.Second, Block: -time.Second}, 1)
		var ce *ratelimit.CommandError
		if !errors.As(err, &ce) || ce.Message != "ERR BLOCK must be an integer from 1 to 315360000000 (milliseconds, with MS)" {
			t.Fatalf("BLOCK -1 s: %v", err)
		}
	})
}

func TestShadowAndUnits(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		rules := []ratelimit.Rule{
			{Key: key(t, "enforced"), Limit: ratelimit.Slide{Limit: 10, Window: time.Minute}},
			{Key: key(t, "shadow"), Limit: ratelimit.Slide{Limit: 1, Window: time.Minute, Shadow: true}},
		}
		for i := range 2 {
			r := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t)
			if !r.Allowed || r.Index != 0 || r.Remaining != int64(9-i) || r.Results[1].Allowed != (i == 0) {
				t.Fatalf("call %d: %+v, want allowed, bound by the enforced rule, the shadow refusing the second", i+1, r)
			}
		}
		// The shadow key holds what enforcing it alone would have: 1.
		if r := must(l.Slide(ctx, key(t, "shadow"), ratelimit.Slide{Limit: 1, Window: time.Minute}, 0))(t); r.Remaining != 0 {
			t.Fatalf("the shadow key: %+v", r)
		}
		_, err := l.Allow(ctx, rules[1:], ratelimit.AllowOptions{})
		var ce *ratelimit.CommandError
		if !errors.As(err, &ce) || ce.Message != "ERR at least one spec must be enforced: every spec is SHADOW" {
			t.Fatalf("every spec SHADOW: %v", err)
		}
		_, err = l.Slide(ctx, key(t, "x"), ratelimit.Slide{Limit: 1, Window: time.Minute, Shadow: true}, 1)
		if !errors.As(err, &ce) || ce.Message != "ERR unknown argument 'SHADOW'" {
			t.Fatalf("SHADOW on RL.SLIDE: %v", err)
		}
		// UNITS 0 on every limit is a peek.
		zero := []ratelimit.Rule{{Key: key(t, "enforced"), Limit: ratelimit.Slide{Limit: 10, Window: time.Minute, Units: ratelimit.Units(0)}}}
		if r := must(l.Allow(ctx, zero, ratelimit.AllowOptions{Quantity: 5}))(t); !r.Allowed || r.Remaining != 8 {
			t.Fatalf("UNITS 0: %+v, want a peek (8 left)", r)
		}
		each := must(l.AllowEach(ctx, []ratelimit.Rule{rules[0], {Key: key(t, "shadow"), Limit: ratelimit.Slide{Limit: 1, Window: time.Minute}}}, ratelimit.AllowOptions{}))(t)
		if len(each) != 2 || !each[0].Allowed || each[1].Allowed {
			t.Fatalf("AllowEach: %+v, want the first allowed, the second refused on its own", each)
		}
	})
}

func TestAcquire(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		// 10 a second, no burst: a turn every 100 ms.
		lim := ratelimit.Throttle{MaxBurst: 0, Count: 10, Period: time.Second}
		r, err := l.Acquire(ctx, key(t, "a"), lim, time.Second)
		if err != nil || !r.Allowed || r.RetryAfter != 0 {
			t.Fatalf("the first Acquire: %+v %v, want at once", r, err)
		}
		start := time.Now()
		r, err = l.Acquire(ctx, key(t, "a"), lim, time.Second)
		took := time.Since(start)
		if err != nil || !r.Allowed || r.RetryAfter <= 50*time.Millisecond || r.RetryAfter > 100*time.Millisecond || took < r.RetryAfter {
			t.Fatalf("the second Acquire: %+v %v after %v, want a wait of up to 100 ms, slept", r, err, took)
		}
		// Its turn is more than 10 ms away: refused, nothing booked.
		_, err = l.Acquire(ctx, key(t, "a"), lim, 10*time.Millisecond)
		var le *ratelimit.LimitedError
		if !errors.As(err, &le) || !errors.Is(err, ratelimit.ErrLimited) || le.RetryAfter <= 10*time.Millisecond {
			t.Fatalf("a wait beyond MAXWAIT: %v", err)
		}
		// A deadline 20 ms away caps a MAXWAIT of a minute.
		dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, err = l.Acquire(dctx, key(t, "a"), lim, time.Minute)
		if !errors.Is(err, ratelimit.ErrLimited) || time.Since(start) > 20*time.Millisecond {
			t.Fatalf("a deadline before the turn: %v after %v, want refused at once", err, time.Since(start))
		}
		both := []ratelimit.Rule{{Key: key(t, "a"), Limit: lim}, {Key: key(t, "b"), Limit: ratelimit.Throttle{MaxBurst: 0, Count: 5, Period: time.Second}}}
		time.Sleep(100 * time.Millisecond)
		must(l.AcquireAll(ctx, both, 1, time.Second))(t)
		start = time.Now()
		a, err := l.AcquireAll(ctx, both, 1, time.Second)
		if err != nil || a.Index != 1 || a.RetryAfter <= 150*time.Millisecond || a.RetryAfter > 200*time.Millisecond || time.Since(start) < a.RetryAfter {
			t.Fatalf("AcquireAll: %+v %v, want the 5-a-second limit's wait of up to 200 ms", a, err)
		}
		_, err = l.AcquireAll(ctx, []ratelimit.Rule{{Key: key(t, "s"), Limit: ratelimit.Slide{Limit: 1, Window: time.Second}}}, 1, time.Second)
		var ce *ratelimit.CommandError
		if !errors.As(err, &ce) || ce.Message != "ERR MAXWAIT takes THROTTLE limits only: spec 1 is SLIDE" {
			t.Fatalf("AcquireAll of a SLIDE: %v", err)
		}
	})
}

// Workers sharing a limit through Acquire stay within its rate: 20
// goroutines after 10 turns a second, no burst, for 300 ms.
func TestAcquirePaces(t *testing.T) {
	s := module(t)
	l := ratelimit.New(s.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	lim := ratelimit.Throttle{MaxBurst: 0, Count: 10, Period: time.Second}
	turns := make(chan time.Time, 100)
	done := make(chan struct{})
	for range 20 {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				if _, err := l.Acquire(ctx, key(t, "p"), lim, time.Second); err != nil {
					return
				}
				turns <- time.Now()
			}
		}()
	}
	for range 20 {
		<-done
	}
	close(turns)
	n := len(turns)
	// At 0, 100, 200 ms (and perhaps 300 ms, at the deadline): 3 or 4.
	if n < 3 || n > 4 {
		t.Fatalf("%d turns in 300 ms of 10 a second", n)
	}
}

func module(t *testing.T) *redistest.Server {
	for _, s := range redistest.Matrix(t) {
		if s.Module {
			return s
		}
	}
	t.Fatal("no server with the module")
	return nil
}

func TestTop(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		lim := ratelimit.Slide{Limit: 1, Window: time.Minute}
		for range 4 {
			must(l.Slide(ctx, key(t, "top"), lim, 1))(t)
		}
		top, err := l.Top(ctx, 128)
		if b, _, _ := l.BackendInUse(ctx); b == ratelimit.BackendLua {
			var ce *ratelimit.CommandError
			if !errors.As(err, &ce) || ce.Message != "ERR RL.TOP needs the module: the Lua backend keeps no summary of refusals" {
				t.Fatalf("RL.TOP on the Lua backend: %v %v", top, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range top {
			if e.Key == key(t, "top") {
				if e.Refusals < 2 || e.Refusals > 3 || time.Since(e.LastRefusal) > time.Minute {
					t.Fatalf("RL.TOP's entry: %+v, want 3 refusals (2 after a little decay), just now", e)
				}
				return
			}
		}
		t.Fatalf("RL.TOP %+v has no %s", top, key(t, "top"))
	})
}

func TestTopCount(t *testing.T) {
	l := ratelimit.New(module(t).Client(t))
	_, err := l.Top(context.Background(), 129)
	if err == nil || !strings.HasPrefix(err.Error(), "ERR COUNT must be an integer from 1 to 128") {
		t.Fatalf("COUNT 129: %v", err)
	}
}
