package ratelimit_test

// The package on Redis Cluster: for each server of the matrix, three
// masters (no replicas) with the module loaded under PREFIX CL, reached
// through NewUniversalClient (three addresses: a ClusterClient) and
// NewClusterClient. A hook on every node counts the MOVED and ASK
// replies: each command must reach its key's master at once.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/httplimit"
	"github.com/redis-ratelimit/redis-ratelimit/clients/go/internal/redistest"
)

// redirects is a hook on each node's client: the commands it sent, and
// those a node answered MOVED or ASK (sent to the wrong node).
type redirects struct {
	mu    sync.Mutex
	sent  int
	moved []string
}

func (r *redirects) note(cmds ...redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		r.sent++
		if err := c.Err(); err != nil && (strings.HasPrefix(err.Error(), "MOVED ") || strings.HasPrefix(err.Error(), "ASK ")) {
			r.moved = append(r.moved, c.String())
		}
	}
}

func (r *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.note(cmd)
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		r.note(cmds...)
		return err
	}
}

// check fails t if a command was redirected, or if the hook saw nothing.
func (r *redirects) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sent == 0 {
		t.Fatal("the redirect hook saw no command")
	}
	if len(r.moved) > 0 {
		t.Fatalf("%d of %d commands went to another node than their key's master: %q", len(r.moved), r.sent, r.moved)
	}
}

// clusterClient is a ClusterClient of c, from NewUniversalClient when
// universal, else NewClusterClient, with the redirect hook on its nodes.
func clusterClient(t *testing.T, c *redistest.Cluster, universal bool) (*redis.ClusterClient, *redirects) {
	t.Helper()
	var cc *redis.ClusterClient
	if universal {
		u := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: c.Addrs()})
		var ok bool
		if cc, ok = u.(*redis.ClusterClient); !ok {
			t.Fatalf("NewUniversalClient with three addresses gave a %T, not a *redis.ClusterClient", u)
		}
	} else {
		cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	}
	t.Cleanup(func() { _ = cc.Close() })
	r := &redirects{}
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(r) })
	return cc, r
}

// tagsOnMasters are three hash tags, "{tag}" of the i-th on the i-th
// master (CLUSTER KEYSLOT says where).
func tagsOnMasters(t *testing.T, cc *redis.ClusterClient, base string) [3]string {
	t.Helper()
	var tags [3]string
	found := 0
	for i := 0; found < 3; i++ {
		tag := fmt.Sprintf("%s-%d", base, i)
		slot := must(cc.ClusterKeySlot(context.Background(), tag).Result())(t)
		for n, r := range redistest.Ranges {
			if int(slot) >= r[0] && int(slot) <= r[1] && tags[n] == "" {
				tags[n] = tag
				found++
			}
		}
	}
	return tags
}

// keysInSlot is CLUSTER COUNTKEYSINSLOT of tag's slot on every node.
func keysInSlot(t *testing.T, c *redistest.Cluster, cc *redis.ClusterClient, tag string) []int64 {
	t.Helper()
	ctx := context.Background()
	slot := must(cc.ClusterKeySlot(ctx, tag).Result())(t)
	out := make([]int64, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = must(n.Client(t).ClusterCountKeysInSlot(ctx, int(slot)).Result())(t)
	}
	return out
}

func TestCluster(t *testing.T) {
	t.Parallel()
	for _, b := range redistest.Binaries() {
		t.Run(filepath.Base(b), func(t *testing.T) {
			t.Parallel()
			c := redistest.StartCluster(t, b, []string{"PREFIX", "CL"})
			t.Run("universal", func(t *testing.T) { clusterModule(t, c, true) })
			t.Run("cluster-client", func(t *testing.T) { clusterModule(t, c, false) })
			t.Run("lua", func(t *testing.T) { clusterLua(t, c) })
			t.Run("top", func(t *testing.T) { clusterTop(t, c) })
			t.Run("httplimit", func(t *testing.T) { clusterMiddleware(t, c) })
		})
	}
}

// clusterModule: every call of the package on the module, keys spread
// over the three masters.
func clusterModule(t *testing.T, c *redistest.Cluster, universal bool) {
	ctx := context.Background()
	cc, hops := clusterClient(t, c, universal)
	l := ratelimit.New(cc)
	if got, prefix, err := l.BackendInUse(ctx); err != nil || got != ratelimit.BackendModule || prefix != "CL" {
		t.Fatalf("BackendInUse = %v %q %v, want the module under PREFIX CL", got, prefix, err)
	}
	tags := tagsOnMasters(t, cc, t.Name())

	// Single commands: each tag's four keys live on its master alone.
	for n, tag := range tags {
		k := func(s string) string { return "{" + tag + "}:" + s }
		checks := []struct {
			what string
			res  func() (ratelimit.Result, error)
			want int64
		}{
			{"THROTTLE", func() (ratelimit.Result, error) {
				return l.Throttle(ctx, k("t"), ratelimit.Throttle{MaxBurst: 2, Count: 10, Period: time.Minute}, 1)
			}, 2},
			{"SLIDE", func() (ratelimit.Result, error) {
				return l.Slide(ctx, k("s"), ratelimit.Slide{Limit: 5, Window: time.Minute}, 1)
			}, 4},
			{"SLICE", func() (ratelimit.Result, error) {
				return l.Slice(ctx, k("c"), ratelimit.Slice{Limit: 5, Window: time.Minute, Slices: 6}, 1)
			}, 4},
			{"QUOTA", func() (ratelimit.Result, error) {
				return l.Quota(ctx, k("q"), ratelimit.Quota{Limit: 5, Unit: ratelimit.Day}, 1)
			}, 4},
		}
		for _, ch := range checks {
			r := must(ch.res())(t)
			if !r.Allowed || r.Remaining != ch.want {
				t.Fatalf("%s on master %d: %+v, want allowed with %d remaining", ch.what, n, r, ch.want)
			}
		}
		in := must(l.Inspect(ctx, k("s")))(t)
		if in == nil || in.Type != "slide" {
			t.Fatalf("INSPECT on master %d: %+v, want a slide", n, in)
		}
		// RL.PEEK of two of them: numkeys first, then the keys on master n.
		p := must(l.Peek(ctx, []ratelimit.Rule{{Key: k("s"), Limit: ratelimit.Slide{Limit: 5, Window: time.Minute}},
			{Key: k("c"), Limit: ratelimit.Slice{Limit: 5, Window: time.Minute, Slices: 6}}}, ratelimit.AllowOptions{}))(t)
		if !p.Allowed || p.Results[0].Remaining != 3 || p.Results[1].Remaining != 3 {
			t.Fatalf("PEEK on master %d: %+v, want allowed, leaving 3 and 3", n, p)
		}
		want := []int64{0, 0, 0}
		want[n] = 4
		if got := keysInSlot(t, c, cc, tag); !slices.Equal(got, want) {
			t.Fatalf("the keys of {%s} per node: %v, want %v (on master %d only)", tag, got, want, n)
		}
	}

	// RL.ALLOW, RL.PEEK, RL.REFUND, RL.CHARGE over keys sharing a tag.
	tag := tags[1]
	minute := ratelimit.Slide{Limit: 2, Window: time.Minute}
	rules := []ratelimit.Rule{
		{Key: "{" + tag + "}:a", Limit: minute},
		{Key: "{" + tag + "}:b", Limit: ratelimit.Throttle{MaxBurst: 4, Count: 5, Period: time.Minute}},
	}
	r := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t)
	if !r.Allowed || r.Index != 0 || r.Results[0].Remaining != 1 || r.Results[1].Remaining != 4 {
		t.Fatalf("ALLOW: %+v, want allowed, slide binding with 1 remaining, throttle 4", r)
	}
	for range 2 { // what one more ALLOW would leave, twice: nothing taken
		p := must(l.Peek(ctx, rules, ratelimit.AllowOptions{}))(t)
		if !p.Allowed || p.Results[0].Remaining != 0 || p.Results[1].Remaining != 3 {
			t.Fatalf("PEEK: %+v, want allowed, leaving 0 and 3", p)
		}
	}
	if g := must(l.Refund(ctx, rules[0].Key, minute, 1))(t); g.Remaining != 2 {
		t.Fatalf("REFUND: %+v, want 2 remaining", g)
	}
	if g := must(l.Charge(ctx, rules[0].Key, minute, 3))(t); g.Remaining != 0 {
		t.Fatalf("CHARGE 3 of 2: %+v, want 0 remaining (in debt)", g)
	}
	if r := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t); r.Allowed || r.Index != 0 {
		t.Fatalf("ALLOW in debt: %+v, want refused by the slide", r)
	}

	// Settle: one pipeline over a key on each master.
	hundred := ratelimit.Slide{Limit: 100, Window: time.Minute}
	var settle []ratelimit.Rule
	for _, tag := range tags {
		rule := ratelimit.Rule{Key: "{" + tag + "}:settle", Limit: hundred}
		must(l.Allow(ctx, []ratelimit.Rule{rule}, ratelimit.AllowOptions{Quantity: 10}))(t)
		settle = append(settle, rule)
	}
	got := must(l.SettleEach(ctx, settle, []int64{10, 10, 10}, []int64{4, 10, 30}))(t)
	if got[0] == nil || got[0].Remaining != 96 || got[1] != nil || got[2] == nil || got[2].Remaining != 70 {
		t.Fatalf("SETTLE: %v, want 96 remaining, nothing sent, 70 remaining", got)
	}

	// A lease held, refused to another id, released.
	lease := ratelimit.Lease{Limit: 1, TTL: 3 * time.Second}
	lk := "{" + tags[2] + "}:lease"
	res, release, err := l.Hold(ctx, lk, lease, 1)
	if err != nil || !res.Allowed {
		t.Fatalf("Hold: %+v %v, want held", res, err)
	}
	if r := must(l.Lease(ctx, lk, lease, "other", 1))(t); r.Allowed {
		t.Fatalf("LEASE while held: %+v, want refused", r)
	}
	if err := release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if r := must(l.Lease(ctx, lk, lease, "other", 1))(t); !r.Allowed {
		t.Fatalf("LEASE after the release: %+v, want allowed", r)
	}

	// Acquire (MAXWAIT): a turn within the wait is granted and slept; a
	// turn a minute away is refused.
	twice := ratelimit.Throttle{MaxBurst: 0, Count: 2, Period: time.Second}
	ak := "{" + tags[0] + "}:acquire"
	if r := must(l.Acquire(ctx, ak, twice, time.Second))(t); r.RetryAfter != 0 {
		t.Fatalf("first Acquire: %+v, want no wait", r)
	}
	if r := must(l.Acquire(ctx, ak, twice, time.Second))(t); r.RetryAfter <= 0 || r.RetryAfter > 500*time.Millisecond {
		t.Fatalf("second Acquire: %+v, want a wait in (0, 500 ms]", r)
	}
	hourly := ratelimit.Throttle{MaxBurst: 0, Count: 1, Period: time.Minute}
	must(l.Acquire(ctx, ak+":m", hourly, 0))(t)
	_, err = l.Acquire(ctx, ak+":m", hourly, 100*time.Millisecond)
	var limited *ratelimit.LimitedError
	if !errors.As(err, &limited) || limited.RetryAfter <= 59*time.Second || limited.RetryAfter > time.Minute {
		t.Fatalf("Acquire a minute away: %v, want a LimitedError retrying in (59 s, 60 s]", err)
	}

	crossSlot(t, l, tags, "RL.ALLOW")
	hops.check(t)
}

// crossSlot: RL.ALLOW over keys of two masters is a CrossSlotError, and
// records nothing.
func crossSlot(t *testing.T, l *ratelimit.Limiter, tags [3]string, command string) {
	t.Helper()
	ctx := context.Background()
	rules := []ratelimit.Rule{
		{Key: "{" + tags[0] + "}:x", Limit: ratelimit.Slide{Limit: 5, Window: time.Minute}},
		{Key: "{" + tags[1] + "}:x", Limit: ratelimit.Slide{Limit: 5, Window: time.Minute}},
	}
	_, err := l.Allow(ctx, rules, ratelimit.AllowOptions{})
	var cs *ratelimit.CrossSlotError
	if !errors.As(err, &cs) || !errors.Is(err, ratelimit.ErrCrossSlot) || cs.Command != command || !strings.Contains(err.Error(), "hash tag") {
		t.Fatalf("ALLOW over two slots: %T %v, want a CrossSlotError of %s naming hash tags", err, err, command)
	}
	for _, r := range rules {
		if in := must(l.Inspect(ctx, r.Key))(t); in != nil {
			t.Fatalf("%s after the refused ALLOW: %+v, want nothing recorded", r.Key, in)
		}
	}
}

func scriptSHA(t *testing.T, command string) string {
	t.Helper()
	src, ok := ratelimit.ScriptSource(command)
	if !ok {
		t.Fatalf("no script answers %s", command)
	}
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// loaded is SCRIPT EXISTS sha on each master, in the order of c.Nodes.
func loaded(t *testing.T, c *redistest.Cluster, sha string) []bool {
	t.Helper()
	out := make([]bool, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = must(n.Client(t).ScriptExists(context.Background(), sha).Result())(t)[0]
	}
	return out
}

func flushScripts(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		if err := n.Client(t).ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// clusterLua: the scripts forced where the module is loaded; EVALSHA goes
// to the key's master, and a master without the script (SCRIPT FLUSH)
// answers NOSCRIPT, which the package answers with EVAL, single and
// pipelined.
func clusterLua(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	cc, hops := clusterClient(t, c, true)
	l := ratelimit.New(cc, ratelimit.WithBackend(ratelimit.BackendLua))
	if got, _, err := l.BackendInUse(ctx); err != nil || got != ratelimit.BackendLua {
		t.Fatalf("BackendInUse = %v %v, want lua", got, err)
	}
	tags := tagsOnMasters(t, cc, t.Name())
	throttle := scriptSHA(t, "RL.THROTTLE")
	flushScripts(t, c)
	lim := ratelimit.Throttle{MaxBurst: 2, Count: 10, Period: time.Minute}
	for n, tag := range tags {
		// Only the masters asked so far hold the script: EVAL loaded it
		// on each after its NOSCRIPT.
		want := []bool{false, false, false}
		for i := range n {
			want[i] = true
		}
		if got := loaded(t, c, throttle); !slices.Equal(got, want) {
			t.Fatalf("RL.THROTTLE's script before the call on master %d: loaded %v, want %v", n, got, want)
		}
		for _, remaining := range []int64{2, 1} {
			r := must(l.Throttle(ctx, "{"+tag+"}:lt", lim, 1))(t)
			if !r.Allowed || r.Remaining != remaining {
				t.Fatalf("THROTTLE on master %d: %+v, want allowed with %d remaining", n, r, remaining)
			}
		}
		want[n] = true
		if got := loaded(t, c, throttle); !slices.Equal(got, want) {
			t.Fatalf("RL.THROTTLE's script after the calls on master %d: loaded %v, want %v", n, got, want)
		}
		if got := keysInSlot(t, c, cc, tag); got[n] != 1 || got[0]+got[1]+got[2] != 1 {
			t.Fatalf("the keys of {%s} per node: %v, want one on master %d", tag, got, n)
		}
	}

	rules := []ratelimit.Rule{
		{Key: "{" + tags[2] + "}:la", Limit: ratelimit.Slide{Limit: 2, Window: time.Minute}},
		{Key: "{" + tags[2] + "}:lb", Limit: ratelimit.Slice{Limit: 3, Window: time.Minute, Slices: 6}},
	}
	if r := must(l.Allow(ctx, rules, ratelimit.AllowOptions{}))(t); !r.Allowed || r.Results[0].Remaining != 1 || r.Results[1].Remaining != 2 {
		t.Fatalf("ALLOW: %+v, want allowed with 1 and 2 remaining", r)
	}

	// Settle pipelines a REFUND to each master, none of which holds the
	// script after the flush: every call comes back NOSCRIPT and is sent
	// again as EVAL.
	hundred := ratelimit.Slide{Limit: 100, Window: time.Minute}
	var settle []ratelimit.Rule
	for _, tag := range tags {
		rule := ratelimit.Rule{Key: "{" + tag + "}:lsettle", Limit: hundred}
		must(l.Allow(ctx, []ratelimit.Rule{rule}, ratelimit.AllowOptions{Quantity: 10}))(t)
		settle = append(settle, rule)
	}
	flushScripts(t, c)
	got := must(l.Settle(ctx, settle, 10, 4))(t)
	for i, g := range got {
		if g == nil || g.Remaining != 96 {
			t.Fatalf("SETTLE on master %d: %+v, want 96 remaining", i, g)
		}
	}
	if got := loaded(t, c, scriptSHA(t, "RL.REFUND")); !slices.Equal(got, []bool{true, true, true}) {
		t.Fatalf("RL.REFUND's script after the pipelined settle: loaded %v, want on every master", got)
	}

	crossSlot(t, l, tags, "RL.ALLOW")
	var ce *ratelimit.CommandError
	if _, err := l.Top(ctx, 0); !errors.As(err, &ce) {
		t.Fatalf("Top on the Lua backend: %v, want a CommandError", err)
	}
	hops.check(t)
}

// clusterTop: RL.TOP asks every master; the keys refused on each are all
// in the merged answer, most refused first.
func clusterTop(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	cc, _ := clusterClient(t, c, true)
	l := ratelimit.New(cc)
	tags := tagsOnMasters(t, cc, t.Name())
	one := ratelimit.Slide{Limit: 1, Window: time.Minute}
	var keys []string
	for n, tag := range tags {
		k := "{" + tag + "}:top"
		keys = append(keys, k)
		for i := range 2 + n { // master n refuses its key 1+n times
			if r := must(l.Slide(ctx, k, one, 1))(t); r.Allowed != (i == 0) {
				t.Fatalf("SLIDE %d on %s: %+v", i+1, k, r)
			}
		}
	}
	top := must(l.Top(ctx, 128))(t)
	at := map[string]int64{}
	for i, e := range top {
		at[e.Key] = e.Refusals
		if i > 0 && top[i-1].Refusals < e.Refusals {
			t.Fatalf("Top is not most refused first: %+v", top)
		}
	}
	for n, k := range keys {
		// Refusals decay: n+1 refusals a moment ago show n+1 or n.
		if r, ok := at[k]; !ok || r < int64(n) || r > int64(n+1) {
			t.Fatalf("Top(128) = %+v: %s (master %d) refused %d times is missing or wrong", top, k, n, n+1)
		}
	}
	for n, node := range c.Nodes {
		// Each master knows its own key only: one node's RL.TOP would miss two.
		own := must(node.Client(t).Do(ctx, "CL.TOP", "COUNT", 128).Slice())(t)
		var names []string
		for _, row := range own {
			names = append(names, fmt.Sprint(row.([]any)[0]))
		}
		for m, k := range keys {
			if slices.Contains(names, k) != (m == n) {
				t.Fatalf("CL.TOP on master %d: %v; %s is on master %d", n, names, k, m)
			}
		}
	}
	// (The merge's order and cut: TestMergeTop. Counts decay between two
	// calls, so only the shape is compared here.)
	if two := must(l.Top(ctx, 2))(t); len(two) != 2 || two[0].Refusals < two[1].Refusals {
		t.Fatalf("Top(2) = %+v, want two entries, most refused first", two)
	}
	if def := must(l.Top(ctx, 0))(t); len(def) != min(10, len(top)) {
		t.Fatalf("Top(0) = %d entries, want %d (the default 10)", len(def), min(10, len(top)))
	}
}

// clusterMiddleware: httplimit over a ClusterClient, a policy of two
// rules whose keys share a hash tag (one RL.ALLOW).
func clusterMiddleware(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	cc, hops := clusterClient(t, c, true)
	l := ratelimit.New(cc)
	tag := t.Name() + "-$ip"
	mw, err := httplimit.New(l, httplimit.Options{Timeout: 5 * time.Second, Rules: []httplimit.Rule{
		{Name: "minute", Key: "{" + tag + "}:m", Limit: ratelimit.Slide{Limit: 2, Window: time.Minute}},
		{Name: "hour", Key: "{" + tag + "}:h", Limit: ratelimit.Slide{Limit: 10, Window: time.Hour}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(mw(hello))
	t.Cleanup(s.Close)
	for i, want := range []string{`"minute";r=1;t=60`, `"minute";r=0;t=60`} {
		res, _ := get(t, s.URL)
		if res.StatusCode != http.StatusOK || res.Header.Get("RateLimit") != want {
			t.Fatalf("request %d: %d %v, want 200 with RateLimit %s", i+1, res.StatusCode, res.Header, want)
		}
	}
	if res, _ := get(t, s.URL); res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d %v, want 429 with Retry-After", res.StatusCode, res.Header)
	}
	key := strings.ReplaceAll(tag, "$ip", "127.0.0.1")
	for _, k := range []string{"{" + key + "}:m", "{" + key + "}:h"} {
		if in := must(l.Inspect(ctx, k))(t); in == nil || in.Type != "slide" {
			t.Fatalf("%s: %+v, want the middleware's slide", k, in)
		}
	}
	hops.check(t)
}

// get is one GET of url: the response (its body read and closed).
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hello\n")) })
