package ratelimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

// backendCase is one server of the matrix with one backend.
type backendCase struct {
	name    string
	server  *redistest.Server
	backend ratelimit.Backend
}

// eachBackend runs f, in parallel, for every server of the matrix with
// every backend it can answer: the module (detected) and the scripts
// (forced) where the module is loaded, the scripts (detected) elsewhere.
func eachBackend(t *testing.T, f func(t *testing.T, l *ratelimit.Limiter)) {
	for _, s := range redistest.Matrix(t) {
		cases := []backendCase{{s.Name() + "/auto", s, ratelimit.BackendAuto}}
		if s.Module {
			cases = append(cases, backendCase{s.Name() + "/lua", s, ratelimit.BackendLua})
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				l := ratelimit.New(c.server.Client(t), ratelimit.WithBackend(c.backend))
				want := ratelimit.BackendLua
				if c.server.Module && c.backend == ratelimit.BackendAuto {
					want = ratelimit.BackendModule
				}
				got, prefix, err := l.BackendInUse(context.Background())
				if err != nil || got != want || (want == ratelimit.BackendModule && prefix != "RL") {
					t.Fatalf("BackendInUse = %v %q %v, want %v", got, prefix, err, want)
				}
				f(t, l)
			})
		}
	}
}

func key(t *testing.T, suffix string) string { return "{" + t.Name() + "}:" + suffix }

// must(call(...))(t) is call's value, failing t on its error.
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestThrottle(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		lim := ratelimit.Throttle{MaxBurst: 2, Count: 10, Period: time.Minute}
		for i, remaining := range []int64{2, 1, 0} {
			r := must(l.Throttle(ctx, key(t, "k"), lim, 1))(t)
			if !r.Allowed || r.Limit != 3 || r.Remaining != remaining || r.RetryAfter != 0 || r.NeverFits {
				t.Fatalf("call %d: %+v, want allowed with %d remaining", i+1, r, remaining)
			}
		}
		r := must(l.Throttle(ctx, key(t, "k"), lim, 1))(t)
		// T = 6 s: the next unit is due 6 s after the first, a little less now.
		if r.Allowed || r.RetryAfter <= 5*time.Second || r.RetryAfter > 6*time.Second || r.ResetAfter <= 17*time.Second || r.ResetAfter > 18*time.Second {
			t.Fatalf("4th call: %+v, want refused, retry in (5 s, 6 s], reset in (17 s, 18 s]", r)
		}
		r = must(l.Throttle(ctx, key(t, "k"), lim, 4))(t)
		if r.Allowed || !r.NeverFits || r.RetryAfter != 0 {
			t.Fatalf("quantity 4 of capacity 3: %+v, want refused, never fits", r)
		}
		in := must(l.Inspect(ctx, key(t, "k")))(t)
		if in == nil || in.Type != "throttle" || in.TTL <= 0 {
			t.Fatalf("Inspect = %+v", in)
		}
		if in := must(l.Inspect(ctx, key(t, "missing")))(t); in != nil {
			t.Fatalf("Inspect of a missing key = %+v, want nil", in)
		}
	})
}

func TestSlideSliceQuota(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		r := must(l.Slide(ctx, key(t, "slide"), ratelimit.Slide{Limit: 2, Window: time.Minute}, 1))(t)
		if !r.Allowed || r.Limit != 2 || r.Remaining != 1 || r.ResetAfter != time.Minute {
			t.Fatalf("Slide: %+v, want allowed, 1 remaining, reset in exactly 60 s", r)
		}
		r = must(l.Slide(ctx, key(t, "slide"), ratelimit.Slide{Limit: 2, Window: time.Minute, Precision: time.Second}, 2))(t)
		if r.Allowed || r.Remaining != 1 || r.RetryAfter <= 59*time.Second || r.RetryAfter > time.Minute {
			t.Fatalf("Slide of 2 more: %+v, want refused until the first unit leaves", r)
		}
		r = must(l.Slice(ctx, key(t, "slice"), ratelimit.Slice{Limit: 5, Window: 10 * time.Second, Slices: 5}, 5))(t)
		if !r.Allowed || r.Limit != 5 || r.Remaining != 0 {
			t.Fatalf("Slice: %+v", r)
		}
		q := ratelimit.Quota{Limit: 100, Unit: ratelimit.Day, Zone: "europe/berlin"}
		r = must(l.Quota(ctx, key(t, "quota"), q, 30))(t)
		if !r.Allowed || r.Limit != 100 || r.Remaining != 70 || r.ResetAfter <= 0 || r.ResetAfter > 25*time.Hour {
			t.Fatalf("Quota: %+v", r)
		}
		in := must(l.Inspect(ctx, key(t, "quota")))(t)
		if in == nil || in.Type != "quota" || in.Fields["zone"] != "Europe/Berlin" {
			t.Fatalf("Inspect of the quota = %+v, want zone Europe/Berlin", in)
		}
		r = must(l.Refund(ctx, key(t, "quota"), q, 10))(t)
		if r.Remaining != 80 {
			t.Fatalf("Refund: %+v, want 80 remaining", r)
		}
	})
}

func TestAllowAndPeek(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		rules := []ratelimit.Rule{
			{Name: "burst", Key: key(t, "a"), Limit: ratelimit.Slide{Limit: 10, Window: time.Minute}},
			{Name: "slow", Key: key(t, "b"), Limit: ratelimit.Throttle{MaxBurst: 1, Count: 1, Period: time.Hour}},
		}
		for i := range 2 {
			r := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t)
			if !r.Allowed || r.Index != 1 || len(r.Results) != 2 || r.Results[0].Remaining != int64(9-i) {
				t.Fatalf("Allow %d: %+v", i+1, r)
			}
		}
		r := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t)
		if r.Allowed || r.Index != 1 || !r.Results[0].Allowed || r.Results[1].Allowed {
			t.Fatalf("third Allow: %+v, want refused by the second rule", r)
		}
		p := must(l.Peek(ctx, rules[:1], ratelimit.AllowOptions{}))(t)
		if !p.Allowed || p.Remaining != 7 {
			t.Fatalf("Peek after a refusal: %+v, want the first rule untouched (8 left, 7 after this one)", p)
		}
		lease := []ratelimit.Rule{{Key: key(t, "lease"), Limit: ratelimit.Lease{Limit: 1, TTL: time.Minute}}}
		if _, err := l.Allow(ctx, lease, ratelimit.AllowOptions{}); !hasArgument(err, "") {
			t.Fatalf("a LEASE rule without ID: %v, want the module's CommandError", err)
		}
		r = must(l.Allow(ctx, lease, ratelimit.AllowOptions{LeaseID: "job-1"}))(t)
		if !r.Allowed || r.Remaining != 0 {
			t.Fatalf("Allow with a lease: %+v", r)
		}
		if ok := must(l.Release(ctx, key(t, "lease"), "job-1"))(t); !ok {
			t.Fatal("Release of a held lease answered false")
		}
		if ok := must(l.Release(ctx, key(t, "lease"), "job-1"))(t); ok {
			t.Fatal("a second Release answered true")
		}
	})
}

func hasArgument(err error, argument string) bool {
	var ce *ratelimit.CommandError
	return errors.As(err, &ce) && ce.Argument == argument
}

func TestErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		_, err := l.Throttle(ctx, key(t, "k"), ratelimit.Throttle{MaxBurst: 1, Count: 0, Period: time.Second}, 1)
		var ce *ratelimit.CommandError
		if !errors.As(err, &ce) || ce.Argument != "count" || ce.Command != "RL.THROTTLE" {
			t.Fatalf("count 0: %v, want a CommandError naming count", err)
		}
		_, err = l.Allow(ctx, []ratelimit.Rule{
			{Key: key(t, "a"), Limit: ratelimit.Slide{Limit: 1, Window: time.Second}},
			{Key: key(t, "b"), Limit: ratelimit.Slide{Limit: 0, Window: time.Second}},
		}, ratelimit.AllowOptions{})
		if !errors.As(err, &ce) || ce.Argument != "limit" || ce.Spec != 2 {
			t.Fatalf("spec 2's limit 0: %v, want a CommandError naming spec 2's limit", err)
		}
		_, err = l.Slide(ctx, key(t, "k"), ratelimit.Slide{Limit: 1, Window: 1500 * time.Microsecond}, 1)
		var ae *ratelimit.ArgumentError
		if !errors.As(err, &ae) || ae.Argument != "window" {
			t.Fatalf("a window of 1.5 ms: %v, want an ArgumentError naming window", err)
		}
		if err := l.Client().Set(ctx, key(t, "s"), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		_, err = l.Slide(ctx, key(t, "s"), ratelimit.Slide{Limit: 1, Window: time.Second}, 1)
		if !errors.Is(err, ratelimit.ErrWrongType) || errors.As(err, &ce) {
			t.Fatalf("a string key: %v, want WRONGTYPE", err)
		}
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.Slide(canceled, key(t, "k"), ratelimit.Slide{Limit: 1, Window: time.Second}, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("an ended context: %v, want context.Canceled", err)
		}
	})
}

func TestModuleForcedWithoutModule(t *testing.T) {
	for _, s := range redistest.Matrix(t) {
		if s.Module {
			continue
		}
		l := ratelimit.New(s.Client(t), ratelimit.WithBackend(ratelimit.BackendModule))
		_, err := l.Throttle(context.Background(), "k", ratelimit.PerSecond(1, 1), 1)
		var be *ratelimit.BackendError
		if !errors.As(err, &be) || !errors.Is(err, ratelimit.ErrBackendUnavailable) {
			t.Fatalf("%s: %v, want a BackendError", s.Name(), err)
		}
	}
}

func TestHoldRenewsUntilReleased(t *testing.T) {
	eachBackend(t, func(t *testing.T, l *ratelimit.Limiter) {
		ctx := context.Background()
		lim := ratelimit.Lease{Limit: 1, TTL: 300 * time.Millisecond}
		r, release, err := l.Hold(ctx, key(t, "l"), lim, 1)
		if err != nil || !r.Allowed {
			t.Fatalf("Hold: %+v %v", r, err)
		}
		// Three TTLs later the lease is still held: it was renewed.
		time.Sleep(900 * time.Millisecond)
		r2, release2, err := l.Hold(ctx, key(t, "l"), lim, 1)
		if err != nil || r2.Allowed || r2.Remaining != 0 {
			t.Fatalf("a second Hold while held: %+v %v, want refused", r2, err)
		}
		if err := release2(); err != nil {
			t.Fatal(err)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := release(); err != nil {
			t.Fatalf("a second release: %v", err)
		}
		if in := must(l.Inspect(ctx, key(t, "l")))(t); in != nil && in.Fields["held"] != int64(0) {
			t.Fatalf("after release: %+v, want nothing held", in)
		}
		// The context ending releases too.
		cctx, cancel := context.WithCancel(ctx)
		r, release, err = l.Hold(cctx, key(t, "l"), ratelimit.Lease{Limit: 1, TTL: time.Minute}, 1)
		if err != nil || !r.Allowed {
			t.Fatalf("Hold: %+v %v", r, err)
		}
		cancel()
		_ = release() // waits for the goroutine's RL.RELEASE
		if r := must(l.Lease(ctx, key(t, "l"), ratelimit.Lease{Limit: 1, TTL: time.Minute}, "other", 0))(t); r.Remaining != 1 {
			t.Fatalf("after the context ended: %+v, want the lease released", r)
		}
	})
}
