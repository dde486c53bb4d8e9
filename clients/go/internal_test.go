package ratelimit

import (
	"bytes"
	"context"
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
	if err != nil || s["RL.THROTTLE"] == nil || s["RL.ALLOW"] == nil || s["RL.ALLOW"].keys != "numkeys" || !s["RL.PEEK"].readonly {
		t.Fatalf("the manifest: %v %v", s, err)
	}
}

func TestSplitKeys(t *testing.T) {
	// columns: numkeys convention, arguments, keys, the rest
	cases := []struct {
		numkeys string
		args    []any
		keys    []string
		rest    []any
	}{
		{"first", []any{"k", "1", "2", "3"}, []string{"k"}, []any{"1", "2", "3"}},
		{"first", nil, nil, nil},
		{"numkeys", []any{"2", "a", "b", "SLIDE", "1", "2"}, []string{"a", "b"}, []any{"2", "SLIDE", "1", "2"}},
		{"numkeys", []any{"3", "a", "b"}, nil, []any{"3", "a", "b"}},
		{"numkeys", []any{"17", "a"}, nil, []any{"17", "a"}},
		{"numkeys", []any{"+1", "a"}, nil, []any{"+1", "a"}},
		{"numkeys", []any{"0"}, nil, []any{"0"}},
		{"none", []any{"COUNT", "5"}, nil, []any{"COUNT", "5"}},
		{"none", nil, nil, nil},
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
		if w := (Throttle{MaxBurst: c.burst, Count: c.count, Period: c.period}).PolicyWindow(); w != c.w {
			t.Errorf("Throttle{%d, %d, %v}.PolicyWindow() = %d, want %d", c.burst, c.count, c.period, w, c.w)
		}
	}
}

// The command lines of ROUND5.md's grammar: spec options in the order
// BLOCK, UNITS, SHADOW; RL.REFUND's and RL.CHARGE's spec without them;
// single commands with BLOCK (and MAXWAIT) after MS.
func TestLines(t *testing.T) {
	cases := []struct {
		got  func() ([]any, error)
		want []any
	}{
		{func() ([]any, error) {
			return Throttle{MaxBurst: 59, Count: 60, Period: time.Minute, Block: time.Second, Units: Units(0), Shadow: true}.Spec()
		}, []any{"THROTTLE", "59", "60", "60000", "BLOCK", "1000", "UNITS", "0", "SHADOW"}},
		{func() ([]any, error) {
			return Slide{Limit: 5, Window: time.Second, Precision: 10 * time.Millisecond, Block: time.Minute}.Spec()
		}, []any{"SLIDE", "5", "1000", "PRECISION", "10", "BLOCK", "60000"}},
		{func() ([]any, error) { return Slice{Limit: 5, Window: time.Second, Slices: 2, Units: Units(7)}.Spec() },
			[]any{"SLICE", "5", "1000", "2", "UNITS", "7"}},
		{func() ([]any, error) {
			return Quota{Limit: 5, Unit: Day, Zone: "Europe/Berlin", Block: time.Hour, Shadow: true}.Spec()
		}, []any{"QUOTA", "5", "DAY", "TZ", "Europe/Berlin", "BLOCK", "3600000", "SHADOW"}},
		{func() ([]any, error) { return Lease{Limit: 2, TTL: time.Second, Units: Units(1), Shadow: true}.Spec() },
			[]any{"LEASE", "2", "1000", "UNITS", "1", "SHADOW"}},
		{func() ([]any, error) {
			return giveLine("k", Slide{Limit: 5, Window: time.Second, Precision: time.Millisecond, Block: time.Second, Units: Units(3), Shadow: true}, 4)
		}, []any{"k", "SLIDE", "5", "1000", "PRECISION", "1", "4", "MS"}},
		{func() ([]any, error) {
			return single("k", Throttle{MaxBurst: 0, Count: 1, Period: time.Second, Block: 2 * time.Second}, 1, "MAXWAIT", "500")
		}, []any{"k", "0", "1", "1000", "1", "MS", "MAXWAIT", "500", "BLOCK", "2000"}},
		{func() ([]any, error) {
			return single("k", Quota{Limit: 9, Unit: Month, Zone: "UTC", Block: time.Second}, 2)
		}, []any{"k", "9", "MONTH", "2", "MS", "TZ", "UTC", "BLOCK", "1000"}},
		{func() ([]any, error) {
			return single("k", Slide{Limit: 2, Window: time.Second, Precision: time.Millisecond, Shadow: true}, 3)
		}, []any{"k", "2", "1000", "3", "MS", "PRECISION", "1", "SHADOW"}},
		{func() ([]any, error) {
			return severalLine([]Rule{{Key: "a", Limit: PerSecond(1, 1)}}, AllowOptions{Quantity: 2, MaxWait: Wait(1500 * time.Millisecond), LeaseID: "x"})
		}, []any{"1", "a", "THROTTLE", "0", "1", "1000", "QUANTITY", "2", "MS", "MAXWAIT", "1500", "ID", "x"}},
	}
	for i, c := range cases {
		got, err := c.got()
		if len(got) > 0 && got[0] == nil {
			got = got[1:] // the slot of the command's name
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d: %v %v, want %v", i, got, err, c.want)
		}
	}
	if _, err := (Throttle{MaxBurst: 1, Count: 1, Period: time.Second, Block: time.Microsecond}).Spec(); err == nil {
		t.Error("a BLOCK of 1 µs was taken")
	}
	if !IsShadow(Slide{Shadow: true}) || IsShadow(WithShadow(Slide{Shadow: true}, false)) || !IsShadow(WithShadow(Lease{}, true)) {
		t.Error("IsShadow / WithShadow")
	}
}

// A ctx deadline caps MAXWAIT, rounded down to the millisecond, never
// below 0; without a deadline MAXWAIT is sent as given.
func TestWaitFor(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	if w := waitFor(context.Background(), 1500*time.Millisecond, now); w != 1500*time.Millisecond {
		t.Errorf("no deadline: %v", w)
	}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(250*time.Millisecond+900*time.Microsecond))
	defer cancel()
	if w := waitFor(ctx, time.Minute, now); w != 250*time.Millisecond {
		t.Errorf("a deadline 250.9 ms away: %v, want 250 ms", w)
	}
	if w := waitFor(ctx, 100*time.Millisecond, now); w != 100*time.Millisecond {
		t.Errorf("a wait shorter than the deadline: %v", w)
	}
	if w := waitFor(ctx, time.Minute, now.Add(time.Second)); w != 0 {
		t.Errorf("a deadline passed: %v, want 0", w)
	}
}

// mergeTop orders the masters' RL.TOP entries as one node orders its own.
// Columns: the entries given (key, refusals, last refusal in ms), the
// count asked, the keys expected in order.
func TestMergeTop(t *testing.T) {
	e := func(key string, n, ms int64) TopEntry {
		return TopEntry{Key: key, Refusals: n, LastRefusal: time.UnixMilli(ms)}
	}
	for _, c := range []struct {
		name  string
		in    []TopEntry
		count int
		want  []string
	}{
		{"most refusals first", []TopEntry{e("a", 1, 9), e("b", 3, 1), e("c", 2, 5)}, 10, []string{"b", "c", "a"}},
		{"equal: the later refusal first", []TopEntry{e("a", 2, 1), e("b", 2, 7), e("c", 2, 4)}, 10, []string{"b", "c", "a"}},
		{"equal twice: the key's bytes", []TopEntry{e("b", 2, 7), e("B", 2, 7), e("a", 2, 7)}, 10, []string{"B", "a", "b"}},
		{"cut to count", []TopEntry{e("a", 1, 1), e("b", 2, 1), e("c", 3, 1)}, 2, []string{"c", "b"}},
		{"count 0: the default 10", make([]TopEntry, 12), 0, make([]string, 10)},
		{"fewer than count", []TopEntry{e("a", 1, 1)}, 5, []string{"a"}},
		{"none", nil, 3, []string{}},
	} {
		got := []string{}
		for _, x := range mergeTop(c.in, c.count) {
			got = append(got, x.Key)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
