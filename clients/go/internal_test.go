package ratelimit

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The embedded scripts are exactly clients/lua/dist: go generate copies
// them, nobody by hand.
func TestEmbeddedScriptsAreDist(t *testing.T) {
	for file, embedded := range map[string][]byte{"ratelimit.lua": scriptBody, "manifest.json": scriptManifest} {
		dist, err := os.ReadFile(filepath.Join("..", "lua", "dist", file))
		if err != nil {
			t.Fatalf("clients/lua/dist/%s: %v", file, err)
		}
		if !bytes.Equal(dist, embedded) {
			t.Errorf("luadist/%s differs from clients/lua/dist/%s: run go generate in clients/go", file, file)
		}
	}
	s, err := loadScripts()
	if err != nil || s["RL.THROTTLE"] == nil || s["RL.ALLOW"] == nil || !s["RL.ALLOW"].numkeys || !s["RL.PEEK"].readonly {
		t.Fatalf("the manifest: %v %v", s, err)
	}
}

func TestSplitKeys(t *testing.T) {
	// columns: numkeys convention, arguments, keys, the rest
	cases := []struct {
		numkeys bool
		args    []any
		keys    []string
		rest    []any
	}{
		{false, []any{"k", "1", "2", "3"}, []string{"k"}, []any{"1", "2", "3"}},
		{false, nil, nil, nil},
		{true, []any{"2", "a", "b", "SLIDE", "1", "2"}, []string{"a", "b"}, []any{"2", "SLIDE", "1", "2"}},
		{true, []any{"3", "a", "b"}, nil, []any{"3", "a", "b"}},
		{true, []any{"17", "a"}, nil, []any{"17", "a"}},
		{true, []any{"+1", "a"}, nil, []any{"+1", "a"}},
		{true, []any{"0"}, nil, []any{"0"}},
	}
	for _, c := range cases {
		keys, rest := splitKeys(c.numkeys, c.args)
		if !reflect.DeepEqual(keys, c.keys) || !reflect.DeepEqual(rest, c.rest) {
			t.Errorf("splitKeys(%v, %v) = %v %v, want %v %v", c.numkeys, c.args, keys, rest, c.keys, c.rest)
		}
	}
}

// CONTRACT.md's example: RL.QUOTA k 100 DAY TZ europe/berlin on 2026-03-01.
func TestHeadZones(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	lo := now.Add(-400 * 24 * time.Hour).Unix()
	head := Head("", []any{"100", "DAY", "tz", "europe/berlin", "TZ", "europe/berlin", "TZ", "UTC", "TZ", "+08:00", "TZ", "Mars/Olympus"}, now)
	segs := strings.Split(head, ";")
	if len(segs) != 2 || segs[0] != "" {
		t.Fatalf("head %q: want the clock and one zone segment", head)
	}
	f := strings.Split(segs[1], "|")
	want := []string{"europe/berlin", "Europe/Berlin", itoa(lo), "3600"}
	if !reflect.DeepEqual(f[:4], want) {
		t.Fatalf("segment %q starts %v, want %v", segs[1], f[:4], want)
	}
	// lo is 2025-01-25: the changes of 2025 and 2026, and March 2027's.
	changes := f[4:]
	wantChanges := []string{"1743296400", "7200", "1761440400", "3600", "1774746000", "7200", "1792890000", "3600", "1806195600", "7200"}
	if !reflect.DeepEqual(changes, wantChanges) {
		t.Fatalf("changes %v, want %v", changes, wantChanges)
	}
	if h := Head("1700000000000000", []any{"1", "DAY"}, now); h != "1700000000000000" {
		t.Fatalf("head without zones: %q", h)
	}
}

func TestHeaders(t *testing.T) {
	lim := Throttle{MaxBurst: 9, Count: 10, Period: time.Minute}
	h, err := Headers(Result{Allowed: false, Limit: 10, Remaining: 0, RetryAfter: 5500 * time.Millisecond, ResetAfter: 59001 * time.Millisecond}, "per-user", lim)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Ratelimit-Policy":      `"per-user";q=10;w=60`,
		"Ratelimit":             `"per-user";r=0;t=6`,
		"X-Ratelimit-Limit":     "10",
		"X-Ratelimit-Remaining": "0",
		"X-Ratelimit-Reset":     "60",
		"Retry-After":           "6",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("fields %v, want exactly %v", h, want)
	}
	never, _ := Headers(Result{Limit: 3, NeverFits: true}, "", Lease{Limit: 3, TTL: time.Second})
	if never.Get("Retry-After") != "" || never.Get("RateLimit-Policy") != `"default";q=3;qu="concurrent-requests"` || never.Get("RateLimit") != `"default";r=0;t=0` {
		t.Errorf("a lease that never fits: %v", never)
	}
	rules := []Rule{{Name: `a"b`, Limit: Slide{Limit: 5, Window: 1500 * time.Millisecond}}, {Name: "q", Limit: Quota{Limit: 100, Unit: Day}}}
	ar := AllowResult{Result: Result{Allowed: true, Limit: 100, Remaining: 1, ResetAfter: time.Hour}, Index: 1,
		Results: []Result{{Allowed: true, Limit: 5, Remaining: 4}, {Allowed: true, Limit: 100, Remaining: 1, ResetAfter: time.Hour}}}
	h, err = AllowHeaders(ar, rules)
	if err != nil || h.Get("RateLimit-Policy") != `"a\"b";q=5;w=2, "q";q=100` || h.Get("RateLimit") != `"q";r=1;t=3600` {
		t.Errorf("AllowHeaders: %v %v", h, err)
	}
	if _, err := Headers(Result{}, "é", lim); err == nil {
		t.Error("a name that is not printable ASCII was taken")
	}
}

func TestThrottleWindow(t *testing.T) {
	// columns: max_burst, count, period, w in seconds
	cases := []struct {
		burst, count int64
		period       time.Duration
		w            int64
	}{
		{9, 10, time.Minute, 60},
		{0, 10, time.Second, 1},
		{2, 3, 10 * time.Second, 10},
		{1, 3, 10 * time.Second, 7},
		{0, 1, 1500 * time.Millisecond, 2},
	}
	for _, c := range cases {
		if w := (Throttle{c.burst, c.count, c.period}).PolicyWindow(); w != c.w {
			t.Errorf("Throttle{%d, %d, %v}.PolicyWindow() = %d, want %d", c.burst, c.count, c.period, w, c.w)
		}
	}
}
