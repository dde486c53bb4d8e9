package ratelimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

// A server whose TIME is gone (renamed away, so refused in scripts, as
// ElastiCache Serverless refuses it, and outside them too): the Lua
// backend switches to the client-passed clock, read from INFO server.
func TestTimeRefusedInScripts(t *testing.T) {
	for _, b := range redistest.Binaries() {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			s := redistest.Start(t, b, false, "--rename-command", "TIME", "")
			ctx := context.Background()
			server := ratelimit.New(s.Client(t), ratelimit.WithClock(ratelimit.ClockServer))
			_, err := server.Slide(ctx, "k", ratelimit.Slide{Limit: 2, Window: time.Minute}, 1)
			if err == nil || !strings.HasPrefix(err.Error(), "ERR ratelimit: TIME refused in scripts:") {
				t.Fatalf("ClockServer without TIME: %v, want the scripts' TIME refused error", err)
			}
			for _, l := range []*ratelimit.Limiter{ratelimit.New(s.Client(t)), ratelimit.New(s.Client(t), ratelimit.WithClock(ratelimit.ClockClient))} {
				for i, remaining := range []int64{1, 0} {
					r, err := l.Slide(ctx, "k", ratelimit.Slide{Limit: 2, Window: time.Minute}, 1)
					if err != nil || !r.Allowed || r.Remaining != remaining {
						t.Fatalf("call %d: %+v %v, want allowed with %d remaining", i+1, r, err, remaining)
					}
				}
				if err := l.Client().Del(ctx, "k").Err(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Pipelined calls (Settle, AllowEach) on the Lua backend: the first, on a
// server that knows no script and refuses TIME, is answered NOSCRIPT and
// then the TIME refusal, and is sent again each time, all its calls.
func TestPipelinedScriptsWithoutTime(t *testing.T) {
	s := redistest.Start(t, redistest.Binaries()[0], false, "--rename-command", "TIME", "")
	ctx := context.Background()
	l := ratelimit.New(s.Client(t))
	rules := []ratelimit.Rule{
		{Key: "{p}:a", Limit: ratelimit.Slide{Limit: 10, Window: time.Minute}},
		{Key: "{p}:b", Limit: ratelimit.Slide{Limit: 10, Window: time.Minute}},
	}
	got, err := l.AllowEach(ctx, rules, ratelimit.AllowOptions{Quantity: 4})
	if err != nil || len(got) != 2 || got[0].Remaining != 6 || got[1].Remaining != 6 {
		t.Fatalf("AllowEach: %+v %v", got, err)
	}
	if err := l.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	settled, err := l.SettleEach(ctx, rules, []int64{4, 4}, []int64{1, 6})
	if err != nil || settled[0].Remaining != 9 || settled[1].Remaining != 4 {
		t.Fatalf("SettleEach after SCRIPT FLUSH: %+v %v", settled, err)
	}
}
