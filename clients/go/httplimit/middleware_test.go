package httplimit_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/httplimit"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopMatrix()
	os.Exit(code)
}

// logBuffer is a slog destination the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func serve(t *testing.T, l *ratelimit.Limiter, o httplimit.Options, h http.Handler) (*httptest.Server, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	mw, err := httplimit.New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(mw(h))
	t.Cleanup(s.Close)
	return s, logs
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(body)
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello\n") })

func TestAllowedThenRefused(t *testing.T) {
	for _, s := range redistest.Matrix(t) {
		t.Run(s.Name(), func(t *testing.T) {
			t.Parallel()
			l := ratelimit.New(s.Client(t))
			o := httplimit.Options{
				Rules: []httplimit.Rule{{Name: "per-ip", Key: "{" + t.Name() + "}:$ip", Limit: ratelimit.Slide{Limit: 2, Window: time.Minute}}},
				Skip:  func(r *http.Request) bool { return r.URL.Path == "/health" },
			}
			srv, logs := serve(t, l, o, ok)
			for i, remaining := range []string{"1", "0"} {
				res, body := get(t, srv.URL+"/x")
				if res.StatusCode != 200 || body != "hello\n" || res.Header.Get("X-RateLimit-Remaining") != remaining ||
					res.Header.Get("RateLimit-Policy") != `"per-ip";q=2;w=60` || res.Header.Get("RateLimit") != `"per-ip";r=`+remaining+";t=60" {
					t.Fatalf("request %d: %d %q %v", i+1, res.StatusCode, body, res.Header)
				}
			}
			res, body := get(t, srv.URL+"/x")
			if res.StatusCode != 429 || body != "rate limited: retry in 60 s\n" || res.Header.Get("Retry-After") != "60" || res.Header.Get("X-RateLimit-Limit") != "2" {
				t.Fatalf("third request: %d %q %v", res.StatusCode, body, res.Header)
			}
			res, _ = get(t, srv.URL+"/health")
			if res.StatusCode != 200 || res.Header.Get("RateLimit") != "" {
				t.Fatalf("a skipped request: %d %v", res.StatusCode, res.Header)
			}
			if len(logs.lines()) != 0 {
				t.Fatalf("logged %v", logs.lines())
			}
		})
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

func TestLeaseRoutesRefundAndOwnFields(t *testing.T) {
	s := module(t)
	l := ratelimit.New(s.Client(t))
	ctx := context.Background()
	k := "{" + t.Name() + "}"
	held := make(chan struct{})
	var inside ratelimit.Result
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(500)
		case "/own":
			w.Header().Set("X-RateLimit-Limit", "mine")
		case "/job":
			inside, _ = l.Lease(ctx, k+":jobs", ratelimit.Lease{Limit: 1, TTL: time.Minute}, "probe", 0)
			close(held)
		}
	})
	o := httplimit.Options{
		Rules:     []httplimit.Rule{{Name: "all", Key: k + ":all", Limit: ratelimit.Throttle{MaxBurst: 99, Count: 100, Period: time.Minute}}},
		Routes:    []httplimit.Route{{Path: "/job", Methods: []string{"GET"}, Rules: []httplimit.Rule{{Name: "jobs", Key: k + ":jobs", Limit: ratelimit.Lease{Limit: 1, TTL: time.Minute}}}}},
		Refund5xx: true,
	}
	srv, _ := serve(t, l, o, h)
	res, _ := get(t, srv.URL+"/job")
	<-held
	if res.StatusCode != 200 || inside.Remaining != 0 || !strings.Contains(res.Header.Get("RateLimit-Policy"), `"jobs";q=1;qu="concurrent-requests"`) {
		t.Fatalf("/job: %d %v, lease inside the handler %+v", res.StatusCode, res.Header, inside)
	}
	// Released when the handler returned (in the background).
	deadline := time.Now().Add(2 * time.Second)
	for {
		r, err := l.Lease(ctx, k+":jobs", ratelimit.Lease{Limit: 1, TTL: time.Minute}, "probe", 0)
		if err == nil && r.Remaining == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease was not released: %+v %v", r, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	before, _ := l.Throttle(ctx, k+":all", ratelimit.Throttle{MaxBurst: 99, Count: 100, Period: time.Minute}, 0)
	res, _ = get(t, srv.URL+"/fail")
	if res.StatusCode != 500 {
		t.Fatalf("/fail: %d", res.StatusCode)
	}
	for {
		after, _ := l.Throttle(ctx, k+":all", ratelimit.Throttle{MaxBurst: 99, Count: 100, Period: time.Minute}, 0)
		if after.Remaining == before.Remaining {
			break
		}
		if time.Now().After(deadline.Add(2 * time.Second)) {
			t.Fatalf("a 500 kept its unit: %d remaining before, %d after", before.Remaining, after.Remaining)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, _ = get(t, srv.URL+"/own")
	if got := res.Header.Values("X-RateLimit-Limit"); len(got) != 1 || got[0] != "mine" || res.Header.Get("X-RateLimit-Remaining") == "" {
		t.Fatalf("a handler's own field: %v", res.Header)
	}
}

func TestIdentity(t *testing.T) {
	s := module(t)
	l := ratelimit.New(s.Client(t))
	rule := httplimit.Rule{Name: "r", KeyFunc: nil, Key: "{id}:$client|$ip|$method|$path", Limit: ratelimit.Slide{Limit: 1000, Window: time.Minute}}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	record := func(o httplimit.Options) *httptest.Server {
		o.Rules = []httplimit.Rule{rule}
		o.Rules[0].KeyFunc = nil
		srv, _ := serve(t, l, o, h)
		return srv
	}
	// The key is checked through RL.INSPECT: each request creates its key.
	cases := []struct {
		o      httplimit.Options
		header []string
		key    string
	}{
		{httplimit.Options{}, []string{"X-Forwarded-For", "1.2.3.4"}, "{id}:127.0.0.1|127.0.0.1|GET|/a%20b"},
		{httplimit.Options{TrustedProxies: []string{"127.0.0.0/8"}}, []string{"X-Forwarded-For", "9.9.9.9, 5.6.7.8", "X-Forwarded-For", "127.0.0.2"}, "{id}:5.6.7.8|5.6.7.8|GET|/a%20b"},
		{httplimit.Options{TrustedProxies: []string{"127.0.0.1"}, ProxyHeader: "Forwarded"}, []string{"Forwarded", `for="[2001:db8::1]:4711", for=192.0.2.1:80;proto=http`, "X-Forwarded-For", "7.7.7.7"}, "{id}:192.0.2.1|192.0.2.1|GET|/a%20b"},
		{httplimit.Options{TrustedProxies: []string{"*"}, ProxyHeader: "forwarded"}, []string{"Forwarded", `for="[2001:db8::1]:4711", for=192.0.2.1:80`}, "{id}:2001:db8::1|2001:db8::1|GET|/a%20b"},
		{httplimit.Options{TrustedProxies: []string{"127.0.0.1"}, ClientHeader: "X-Client-Id"}, []string{"X-Client-Id", "tenant-7"}, "{id}:tenant-7|127.0.0.1|GET|/a%20b"},
		{httplimit.Options{ClientHeader: "X-Client-Id"}, []string{"X-Client-Id", "tenant-7"}, "{id}:127.0.0.1|127.0.0.1|GET|/a%20b"},
		{httplimit.Options{ClientID: func(*http.Request) string { return "user-1" }}, nil, "{id}:user-1|127.0.0.1|GET|/a%20b"},
	}
	for i, c := range cases {
		srv := record(c.o)
		get(t, srv.URL+"/a%20b?q=1", c.header...)
		in, err := l.Inspect(context.Background(), c.key)
		if err != nil || in == nil {
			t.Errorf("case %d: no key %q (%v)", i, c.key, err)
		}
		l.Client().Del(context.Background(), c.key)
	}
	if _, err := httplimit.New(l, httplimit.Options{Rules: []httplimit.Rule{{Name: "x", Key: "$user", Limit: rule.Limit}}}); err == nil {
		t.Error("an unknown $name was accepted")
	}
	if _, err := httplimit.New(l, httplimit.Options{Rules: []httplimit.Rule{rule, rule}}); err == nil {
		t.Error("a rule name given twice was accepted")
	}
}

// The failures: answered within the timeout (counted from arrival), 503 or
// through with FailOpen, one log line per outage, one when it is back.
func TestFailures(t *testing.T) {
	s := module(t)
	rule := []httplimit.Rule{{Name: "r", Key: "{f}:$ip", Limit: ratelimit.Slide{Limit: 1000, Window: time.Minute}}}
	const timeout = 300 * time.Millisecond
	timed := func(t *testing.T, url string) (*http.Response, string) {
		start := time.Now()
		res, body := get(t, url)
		if took := time.Since(start); took > timeout+200*time.Millisecond {
			t.Fatalf("answered after %v, the timeout is %v", took, timeout)
		}
		return res, body
	}

	t.Run("hung", func(t *testing.T) {
		hung := redistest.Start(t, s.Binary, true)
		l := ratelimit.New(hung.Client(t))
		srv, logs := serve(t, l, httplimit.Options{Rules: rule, Timeout: timeout}, ok)
		if res, _ := timed(t, srv.URL); res.StatusCode != 200 {
			t.Fatalf("before: %d", res.StatusCode)
		}
		hung.Pause()
		for range 3 {
			if res, body := timed(t, srv.URL); res.StatusCode != 503 || body != "rate limiter unavailable\n" || res.Header.Get("RateLimit") != "" {
				t.Fatalf("hung: %d %q %v", res.StatusCode, body, res.Header)
			}
		}
		hung.Resume()
		deadline := time.Now().Add(5 * time.Second)
		for {
			res, _ := timed(t, srv.URL)
			if res.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("still %d after the server resumed", res.StatusCode)
			}
		}
		lines := logs.lines()
		if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "rate limiter unavailable (") ||
			!strings.Contains(lines[0], "answering 503 until it answers again") || !strings.Contains(lines[1], "rate limiter available again, after ") {
			t.Fatalf("the log: %q", lines)
		}
	})

	t.Run("killed, fail open", func(t *testing.T) {
		killed := redistest.Start(t, s.Binary, true)
		l := ratelimit.New(killed.Client(t))
		srv, logs := serve(t, l, httplimit.Options{Rules: rule, Timeout: timeout, FailOpen: true}, ok)
		if res, _ := timed(t, srv.URL); res.StatusCode != 200 || res.Header.Get("RateLimit") == "" {
			t.Fatalf("before: %d %v", res.StatusCode, res.Header)
		}
		killed.Stop()
		for range 3 {
			if res, body := timed(t, srv.URL); res.StatusCode != 200 || body != "hello\n" || res.Header.Get("RateLimit") != "" {
				t.Fatalf("killed, fail open: %d %q %v", res.StatusCode, body, res.Header)
			}
		}
		if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], "letting requests through unlimited (fail open) until it answers again") {
			t.Fatalf("the log: %q", lines)
		}
	})

	t.Run("refusing connections", func(t *testing.T) {
		gone := redistest.Start(t, s.Binary, false)
		addr := gone.Addr
		gone.Stop()
		l := ratelimit.New(redis.NewClient(&redis.Options{Addr: addr}))
		srv, logs := serve(t, l, httplimit.Options{Rules: rule, Timeout: timeout}, ok)
		for range 3 {
			if res, _ := timed(t, srv.URL); res.StatusCode != 503 {
				t.Fatalf("refused: %d", res.StatusCode)
			}
		}
		if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], "rate limiter unavailable (") {
			t.Fatalf("the log: %q", lines)
		}
	})

	t.Run("configuration error", func(t *testing.T) {
		l := ratelimit.New(s.Client(t))
		l.Client().Set(context.Background(), "{f}:127.0.0.1:wrong", "x", time.Minute)
		wrong := []httplimit.Rule{{Name: "r", Key: "{f}:$ip:wrong", Limit: ratelimit.Slide{Limit: 10, Window: time.Minute}}}
		srv, logs := serve(t, l, httplimit.Options{Rules: wrong, Timeout: timeout}, ok)
		for range 3 {
			if res, body := timed(t, srv.URL); res.StatusCode != 500 || body != "rate limiter misconfigured\n" {
				t.Fatalf("WRONGTYPE: %d %q", res.StatusCode, body)
			}
		}
		if lines := logs.lines(); len(lines) != 1 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[0], "rate limiter configuration error (WRONGTYPE") {
			t.Fatalf("the log: %q", lines)
		}
	})
}
