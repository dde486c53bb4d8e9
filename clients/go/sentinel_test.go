package ratelimit_test

// The package behind Sentinel: for each server of the matrix, a master
// and a replica with the module and a sentinel (the same binary with
// --sentinel), reached through NewUniversalClient with a MasterName (a
// FailoverClient). After SENTINEL FAILOVER the calls go on against the
// promoted replica, which holds what replication carried: a limit refused
// before is refused after, a lease held before is still held.

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

func TestSentinel(t *testing.T) {
	t.Parallel()
	for _, b := range redistest.Binaries() {
		t.Run(filepath.Base(b), func(t *testing.T) {
			t.Parallel()
			s := redistest.StartSentinel(t, b)
			testSentinel(t, s)
		})
	}
}

// servedBy is the port of the server the client's commands reach.
func servedBy(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	info := must(rdb.Info(context.Background(), "server").Result())(t)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
			return must(strconv.Atoi(v))(t)
		}
	}
	t.Fatalf("INFO server has no tcp_port: %s", info)
	return 0
}

func testSentinel(t *testing.T, s *redistest.Sentinel) {
	ctx := context.Background()
	u := redis.NewUniversalClient(&redis.UniversalOptions{MasterName: s.Name, Addrs: []string{s.Sentinel.Addr}})
	t.Cleanup(func() { _ = u.Close() })
	if c, ok := u.(*redis.Client); !ok || c.Options().Addr != "FailoverClient" {
		t.Fatalf("NewUniversalClient with a MasterName gave a %T, not a FailoverClient", u)
	}
	l := ratelimit.New(u)
	lua := ratelimit.New(u, ratelimit.WithBackend(ratelimit.BackendLua))
	if got, prefix, err := l.BackendInUse(ctx); err != nil || got != ratelimit.BackendModule || prefix != "RL" {
		t.Fatalf("BackendInUse = %v %q %v, want the module", got, prefix, err)
	}
	if p := servedBy(t, u); p != s.Master.Port {
		t.Fatalf("the client reaches port %d, want the master's %d", p, s.Master.Port)
	}

	hourly := ratelimit.Throttle{MaxBurst: 1, Count: 1, Period: time.Hour}
	slide := ratelimit.Slide{Limit: 1, Window: time.Hour}
	lease := ratelimit.Lease{Limit: 1, TTL: time.Minute}
	for i := range 3 {
		if r := must(l.Throttle(ctx, "s:throttle", hourly, 1))(t); r.Allowed != (i < 2) {
			t.Fatalf("THROTTLE %d before the failover: %+v", i+1, r)
		}
		if r := must(lua.Slide(ctx, "s:lua", slide, 1))(t); r.Allowed != (i == 0) {
			t.Fatalf("the scripts' SLIDE %d before the failover: %+v", i+1, r)
		}
	}
	if r := must(l.Lease(ctx, "s:lease", lease, "before", 1))(t); !r.Allowed {
		t.Fatalf("LEASE before the failover: %+v, want held", r)
	}
	// The replica has all of it before the failover starts.
	if n := must(u.Do(ctx, "WAIT", 1, 5000).Int())(t); n != 1 {
		t.Fatalf("WAIT 1 5000 = %d, want the replica's acknowledgement", n)
	}

	s.Failover(t)
	// The client learns of the new master from the sentinel's
	// +switch-master message: wait (bounded) until it follows.
	deadline := time.Now().Add(30 * time.Second)
	for p := servedBy(t, u); p != s.Replica.Port; p = servedBy(t, u) {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the failover the client still reaches port %d, not the promoted replica's %d", p, s.Replica.Port)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if r := must(l.Throttle(ctx, "s:throttle", hourly, 1))(t); r.Allowed || r.RetryAfter <= 59*time.Minute {
		t.Fatalf("THROTTLE after the failover: %+v, want still refused for about an hour", r)
	}
	if r := must(lua.Slide(ctx, "s:lua", slide, 1))(t); r.Allowed {
		t.Fatalf("the scripts' SLIDE after the failover: %+v, want still refused", r)
	}
	if r := must(l.Lease(ctx, "s:lease", lease, "after", 1))(t); r.Allowed {
		t.Fatalf("LEASE of another id after the failover: %+v, want refused (the lease is held)", r)
	}
	if held := must(l.Release(ctx, "s:lease", "before"))(t); !held {
		t.Fatal("RELEASE after the failover: the lease taken before is not held")
	}
	if r := must(l.Throttle(ctx, "s:fresh", hourly, 1))(t); !r.Allowed || r.Remaining != 1 {
		t.Fatalf("THROTTLE of a new key after the failover: %+v, want allowed", r)
	}
}
