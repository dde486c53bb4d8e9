// The Go package's benchmark, side by side in one run (bench/README.md):
// each typed call against a raw go-redis Do (or EvalSha) of the same
// command line on the same client, in alternating rounds, one call at a
// time; then httplimit's requests per second beside a bare RL.ALLOW per
// request and without a limiter, and the RL.ALLOW calls it made per
// request (INFO commandstats).
//
//	go run . -port PORT [-rounds 100] [-calls 1000] [-http-rounds 6] [-seconds 3] [-clients 8]
package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/httplimit"
)

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// cpu is this process's CPU time so far (user and system).
func cpu() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// timed is the mean wall time of one call of f over n calls, and the mean
// CPU time this process spent on it, in microseconds.
func timed(n int, f func() error) (float64, float64) {
	start, c := time.Now(), cpu()
	for range n {
		if err := f(); err != nil {
			log.Fatal(err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(n), float64((cpu() - c).Nanoseconds()) / 1e3 / float64(n)
}

// pair runs raw and typed in alternating rounds (which goes first
// alternates too) and prints the medians and the per-round ratios.
func pair(title string, rounds, calls int, raw, typed func() error) {
	timed(calls, raw) // warm both
	timed(calls, typed)
	var r, t, ratio, rc, tc []float64
	for i := range rounds {
		var a, b, ac, bc float64
		if i%2 == 0 {
			a, ac = timed(calls, raw)
			b, bc = timed(calls, typed)
		} else {
			b, bc = timed(calls, typed)
			a, ac = timed(calls, raw)
		}
		r, t, ratio, rc, tc = append(r, a), append(t, b), append(ratio, b/a), append(rc, ac), append(tc, bc)
	}
	fmt.Printf("%s, one call at a time, %d rounds of %d calls each way\n", title, rounds, calls)
	fmt.Printf("  raw go-redis:  median %.1f us per call (this process's CPU: %.1f us)\n", median(r), median(rc))
	fmt.Printf("  typed call:    median %.1f us per call (this process's CPU: %.1f us)\n", median(t), median(tc))
	fmt.Printf("  ratio (typed / raw), per round: median %.3fx, min %.3fx, max %.3fx\n", median(ratio), slices.Min(ratio), slices.Max(ratio))
}

func load(url string, clients int, seconds float64) (float64, int64) {
	var done atomic.Int64
	until := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(until) {
				res, err := c.Get(url)
				if err != nil {
					log.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					log.Fatalf("status %d", res.StatusCode)
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), done.Load()
}

func allowCalls(ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_RL.ALLOW:calls="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(v, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

func main() {
	port := flag.Int("port", 6379, "the server's port (with the module loaded)")
	rounds := flag.Int("rounds", 100, "rounds of the typed-vs-raw rows")
	calls := flag.Int("calls", 1000, "calls per round and way")
	httpRounds := flag.Int("http-rounds", 6, "rounds of the middleware row")
	seconds := flag.Float64("seconds", 3, "seconds per middleware round and way")
	clients := flag.Int("clients", 8, "concurrent HTTP clients")
	flag.Parse()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(*port)})
	defer rdb.Close()
	l := ratelimit.New(rdb)
	if b, _, err := l.BackendInUse(ctx); err != nil || b != ratelimit.BackendModule {
		log.Fatalf("the module is not loaded on port %d (%v)", *port, err)
	}
	lim := ratelimit.Throttle{MaxBurst: 999999, Count: 1000000, Period: time.Second}

	pair("RL.THROTTLE (backend: module)", *rounds, *calls,
		func() error {
			return rdb.Do(ctx, "RL.THROTTLE", "bench:t", "999999", "1000000", "1000", "1", "MS").Err()
		},
		func() error { _, err := l.Throttle(ctx, "bench:t", lim, 1); return err })

	rules := []ratelimit.Rule{{Key: "{bench}:a", Limit: lim}, {Key: "{bench}:b", Limit: ratelimit.Slide{Limit: 1000000, Window: time.Second}}}
	pair("RL.ALLOW of 2 limits (backend: module)", *rounds, *calls,
		func() error {
			return rdb.Do(ctx, "RL.ALLOW", "2", "{bench}:a", "{bench}:b", "THROTTLE", "999999", "1000000", "1000",
				"SLIDE", "1000000", "1000", "QUANTITY", "1", "MS").Err()
		},
		func() error { _, err := l.Allow(ctx, rules, ratelimit.AllowOptions{}); return err })

	lua := ratelimit.New(rdb, ratelimit.WithBackend(ratelimit.BackendLua))
	src, _ := ratelimit.ScriptSource("RL.THROTTLE")
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	if err := rdb.ScriptLoad(ctx, src).Err(); err != nil {
		log.Fatal(err)
	}
	pair("RL.THROTTLE (backend: lua; raw = EVALSHA of the same script and arguments)", *rounds, *calls,
		func() error {
			return rdb.EvalSha(ctx, sha, []string{"bench:lua"}, "", "999999", "1000000", "1000", "1", "MS").Err()
		},
		func() error { _, err := lua.Throttle(ctx, "bench:lua", lim, 1); return err })

	// httplimit: GET /hello with one rule that allows every request; the
	// same handler behind a bare RL.ALLOW per request (a raw Do of the
	// line the middleware sends: the floor a middleware can reach); and
	// without either.
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") })
	mw, err := httplimit.New(l, httplimit.Options{Rules: []httplimit.Rule{{Name: "all", Key: "bench:http", Limit: lim}}})
	if err != nil {
		log.Fatal(err)
	}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.Do(r.Context(), "RL.ALLOW", "1", "bench:bare", "THROTTLE", "999999", "1000000", "1000", "QUANTITY", "1", "MS").Err(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		hello(w, r)
	})
	servers := []*httptest.Server{httptest.NewServer(hello), httptest.NewServer(bare), httptest.NewServer(mw(hello))}
	for _, s := range servers {
		defer s.Close()
		load(s.URL, *clients, 0.5)
	}
	before := allowCalls(ctx, rdb)
	rates := make([][]float64, len(servers))
	var withRaw, withNone []float64
	var requests, rawRequests int64
	for i := range *httpRounds {
		got := make([]float64, len(servers))
		for j := range servers {
			k := (j + i) % len(servers) // each way goes first in turn
			var n int64
			got[k], n = load(servers[k].URL, *clients, *seconds)
			switch k {
			case 1:
				rawRequests += n
			case 2:
				requests += n
			}
		}
		for k := range servers {
			rates[k] = append(rates[k], got[k])
		}
		withRaw, withNone = append(withRaw, got[2]/got[1]), append(withNone, got[2]/got[0])
	}
	// Each raw request sends one RL.ALLOW: the rest are httplimit's.
	calls2 := allowCalls(ctx, rdb) - before - rawRequests
	fmt.Printf("GET /hello, %d clients, %d rounds of %g s each way\n", *clients, *httpRounds, *seconds)
	fmt.Printf("  without a limiter:                      median %.0f req/s\n", median(rates[0]))
	fmt.Printf("  a raw RL.ALLOW (go-redis Do) per request: median %.0f req/s\n", median(rates[1]))
	fmt.Printf("  with httplimit (one rule):              median %.0f req/s\n", median(rates[2]))
	fmt.Printf("  httplimit / raw RL.ALLOW, per round: median %.3f, min %.3f, max %.3f\n", median(withRaw), slices.Min(withRaw), slices.Max(withRaw))
	fmt.Printf("  httplimit / without, per round: median %.3f, min %.3f, max %.3f\n", median(withNone), slices.Min(withNone), slices.Max(withNone))
	fmt.Printf("  RL.ALLOW calls of httplimit: %d for %d requests (%.3f per request)\n", calls2, requests, float64(calls2)/float64(requests))
	os.Exit(0)
}
