// A net/http service rate limited by the Go package: per client (the
// X-Client-Id header from a trusted proxy, or else the peer address) 2
// requests per second and 30 per minute, and at most 2 in flight; every
// response carries the RateLimit header fields. Redis failing: 503 within
// RL_TIMEOUT (a Go duration, default 250ms), or through with RL_FAIL_OPEN=yes.
//
//	REDIS_ADDR=127.0.0.1:6379 ADDR=127.0.0.1:8080 go run .
//
// Routes: / answers ok; /status/<code> that status (a 5xx gives the units
// back); /slow/<ms> after that many milliseconds (holding a slot).
//
// Two more programs in the same binary: go run . pacing (workers sharing
// 500 calls a minute through Acquire, pacing.go) and go run . llm (a model
// call's tokens settled after it ends, llm.go).
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/httplimit"
)

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// handler is the service: its routes behind the middleware.
func handler(rdb redis.UniversalClient, timeout time.Duration, failOpen bool) (http.Handler, error) {
	mw, err := httplimit.New(ratelimit.New(rdb), httplimit.Options{
		Rules: []httplimit.Rule{
			{Name: "second", Key: "rl:{user:$client}:s", Limit: ratelimit.Slide{Limit: 2, Window: time.Second}},
			{Name: "minute", Key: "rl:{user:$client}:m", Limit: ratelimit.Slice{Limit: 30, Window: time.Minute, Slices: 12}},
			{Name: "inflight", Key: "rl:{user:$client}:c", Limit: ratelimit.Lease{Limit: 2, TTL: time.Minute}},
		},
		TrustedProxies: []string{"127.0.0.1", "::1"},
		ClientHeader:   "X-Client-Id",
		Timeout:        timeout,
		FailOpen:       failOpen,
		Refund5xx:      true,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil || code < 200 || code > 599 {
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte("status\n"))
	})
	mux.HandleFunc("GET /slow/{ms}", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.PathValue("ms"))
		select {
		case <-time.After(time.Duration(min(max(ms, 0), 60000)) * time.Millisecond):
			_, _ = w.Write([]byte("waited\n"))
		case <-r.Context().Done():
		}
	})
	return mw(mux), nil
}

// serve runs the service on l until ctx ends.
func serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "pacing" || os.Args[1] == "llm") {
		other(os.Args[1], os.Args[2:])
		return
	}
	timeout, err := time.ParseDuration(env("RL_TIMEOUT", "250ms"))
	if err != nil {
		log.Fatalf("RL_TIMEOUT: %v", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: env("REDIS_ADDR", "127.0.0.1:6379"), ContextTimeoutEnabled: true})
	defer rdb.Close()
	h, err := handler(rdb, timeout, strings.EqualFold(os.Getenv("RL_FAIL_OPEN"), "yes"))
	if err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", env("ADDR", "127.0.0.1:8080"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on http://%s", l.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, l, h); err != nil {
		log.Fatal(err)
	}
}

// other runs pacing or llm with their arguments.
func other(name string, args []string) {
	rdb := redis.NewClient(&redis.Options{Addr: env("REDIS_ADDR", "127.0.0.1:6379")})
	defer rdb.Close()
	l := ratelimit.New(rdb)
	arg := func(i int, def string) string {
		if i < len(args) {
			return args[i]
		}
		return def
	}
	number := func(i int, def string) int64 {
		n, err := strconv.ParseInt(arg(i, def), 10, 64)
		if err != nil {
			log.Fatalf("argument %d: %v", i+1, err)
		}
		return n
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if name == "pacing" {
		err = runPacing(ctx, l, int(number(0, "8")), int(number(1, "20")))
	} else {
		err = runLLM(ctx, l, arg(0, "alice"), number(1, "1500"), number(2, "900"))
	}
	if err != nil {
		log.Fatal(err)
	}
}
