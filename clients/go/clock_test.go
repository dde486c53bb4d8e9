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
