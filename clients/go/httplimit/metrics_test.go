package httplimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/httplimit"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

// collected is what a ManualReader holds: ratelimit.decisions by
// "rule/result", ratelimit.decision.duration's counts by result.
type collected struct {
	decisions map[string]int64
	durations map[string]uint64
	scope     string
	units     []string
}

func collect(t *testing.T, r *sdkmetric.ManualReader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	c := collected{decisions: map[string]int64{}, durations: map[string]uint64{}}
	for _, sm := range rm.ScopeMetrics {
		c.scope = sm.Scope.Name
		for _, m := range sm.Metrics {
			c.units = append(c.units, m.Name+" "+m.Unit)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != "ratelimit.decisions" || !d.IsMonotonic {
					t.Fatalf("a sum %s", m.Name)
				}
				for _, p := range d.DataPoints {
					rule, _ := p.Attributes.Value("ratelimit.rule")
					result, _ := p.Attributes.Value("ratelimit.result")
					if p.Attributes.Len() != 2 {
						t.Fatalf("%s has attributes %v", m.Name, p.Attributes.ToSlice())
					}
					c.decisions[rule.AsString()+"/"+result.AsString()] += p.Value
				}
			case metricdata.Histogram[float64]:
				if m.Name != "ratelimit.decision.duration" {
					t.Fatalf("a histogram %s", m.Name)
				}
				for _, p := range d.DataPoints {
					result, _ := p.Attributes.Value("ratelimit.result")
					if p.Attributes.Len() != 1 {
						t.Fatalf("%s has attributes %v", m.Name, p.Attributes.ToSlice())
					}
					if v, _ := p.Max.Value(); v <= 0 || v > 1.5 { // the timeout is 1 s
						t.Fatalf("a decision of %v s", v)
					}
					c.durations[result.AsString()] += p.Count
				}
			default:
				t.Fatalf("an instrument %s of %T", m.Name, m.Data)
			}
		}
	}
	return c
}

func equal[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func metered(t *testing.T, s *redistest.Server, rules ...httplimit.Rule) (string, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	srv, _ := serve(t, ratelimit.New(s.Client(t)), httplimit.Options{Rules: rules, MeterProvider: mp, Timeout: time.Second}, ok)
	return srv.URL, reader
}

func TestMetrics(t *testing.T) {
	s := module(t)
	k := "{" + t.Name() + "}:"
	slide := func(n int64, shadow bool) ratelimit.Limit {
		return ratelimit.Slide{Limit: n, Window: time.Minute, Shadow: shadow}
	}

	t.Run("refused: limited on the binding rule", func(t *testing.T) {
		url, reader := metered(t, s, httplimit.Rule{Name: "all", Key: k + "all", Limit: slide(10, false)},
			httplimit.Rule{Name: "strict", Key: k + "strict", Limit: slide(1, false)})
		for i, want := range []int{200, 429} {
			if res, _ := get(t, url); res.StatusCode != want {
				t.Fatalf("request %d: %d, want %d", i+1, res.StatusCode, want)
			}
		}
		c := collect(t, reader)
		if c.scope != "redis-ratelimit" || !equal(c.decisions, map[string]int64{"all/allowed": 2, "strict/allowed": 1, "strict/limited": 1}) ||
			!equal(c.durations, map[string]uint64{"allowed": 1, "limited": 1}) ||
			strings.Join(c.units, ",") != "ratelimit.decisions {decision},ratelimit.decision.duration s" {
			t.Fatalf("%+v", c)
		}
	})

	t.Run("a shadow rule that would refuse: shadow_limited, and 200", func(t *testing.T) {
		url, reader := metered(t, s, httplimit.Rule{Name: "all", Key: k + "all2", Limit: slide(10, false)},
			httplimit.Rule{Name: "trial", Key: k + "trial", Limit: slide(1, true)})
		for i := range 2 {
			res, _ := get(t, url)
			if res.StatusCode != 200 || strings.Contains(res.Header.Get("RateLimit-Policy"), "trial") || res.Header.Get("X-RateLimit-Remaining") != []string{"9", "8"}[i] {
				t.Fatalf("request %d: %d %v", i+1, res.StatusCode, res.Header)
			}
		}
		c := collect(t, reader)
		if !equal(c.decisions, map[string]int64{"all/allowed": 2, "trial/allowed": 1, "trial/shadow_limited": 1}) ||
			!equal(c.durations, map[string]uint64{"allowed": 2}) {
			t.Fatalf("%+v", c)
		}
	})

	t.Run("every rule shadow: one RL.ALLOW each, never refused", func(t *testing.T) {
		url, reader := metered(t, s, httplimit.Rule{Name: "a", Key: k + "sa", Limit: slide(1, true)},
			httplimit.Rule{Name: "b", Key: k + "sb", Limit: slide(2, true)})
		for i := range 3 {
			if res, body := get(t, url); res.StatusCode != 200 || body != "hello\n" || res.Header.Get("RateLimit") != "" {
				t.Fatalf("request %d: %d %q %v", i+1, res.StatusCode, body, res.Header)
			}
		}
		c := collect(t, reader)
		if !equal(c.decisions, map[string]int64{"a/allowed": 1, "a/shadow_limited": 2, "b/allowed": 2, "b/shadow_limited": 1}) ||
			!equal(c.durations, map[string]uint64{"allowed": 3}) {
			t.Fatalf("%+v", c)
		}
		// Each key holds what enforcing it alone would have.
		l := ratelimit.New(s.Client(t))
		for key, n := range map[string]int64{k + "sa": 1, k + "sb": 2} {
			if r := must(t)(l.Slide(context.Background(), key, ratelimit.Slide{Limit: n, Window: time.Minute}, 0)); r.Remaining != 0 {
				t.Fatalf("%s: %+v, want full", key, r)
			}
		}
	})

	t.Run("an outage: error", func(t *testing.T) {
		gone := redistest.Start(t, s.Binary, true)
		url, reader := metered(t, gone, httplimit.Rule{Name: "r", Key: k + "r", Limit: slide(10, false)}, httplimit.Rule{Name: "t", Key: k + "t", Limit: slide(10, true)})
		gone.Stop()
		if res, _ := get(t, url); res.StatusCode != 503 {
			t.Fatalf("%d, want 503", res.StatusCode)
		}
		c := collect(t, reader)
		if !equal(c.decisions, map[string]int64{"r/error": 1, "t/error": 1}) || !equal(c.durations, map[string]uint64{"error": 1}) {
			t.Fatalf("%+v", c)
		}
	})
}

func must(t *testing.T) func(ratelimit.Result, error) ratelimit.Result {
	return func(r ratelimit.Result, err error) ratelimit.Result {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// Block: a refusal keeps refusing for the block, with its Retry-After;
// on the module and on the scripts.
func TestBlockRule(t *testing.T) {
	s := module(t)
	for _, b := range []ratelimit.Backend{ratelimit.BackendModule, ratelimit.BackendLua} {
		t.Run(b.String(), func(t *testing.T) {
			l := ratelimit.New(s.Client(t), ratelimit.WithBackend(b))
			srv, _ := serve(t, l, httplimit.Options{Rules: []httplimit.Rule{{Name: "login", Key: "{" + t.Name() + "}:$ip",
				Limit: ratelimit.Slide{Limit: 1, Window: time.Second, Block: 10 * time.Minute}}}}, ok)
			get(t, srv.URL)
			for range 2 {
				res, body := get(t, srv.URL)
				if res.StatusCode != 429 || res.Header.Get("Retry-After") != "600" || body != "rate limited: retry in 600 s\n" {
					t.Fatalf("blocked: %d %q %v", res.StatusCode, body, res.Header)
				}
			}
		})
	}
}
