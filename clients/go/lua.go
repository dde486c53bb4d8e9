package ratelimit

import (
	"context"
	"crypto/sha1"
	_ "embed" // the scripts
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Lua backend: the module's commands answered by the shared scripts,
// for servers that cannot load modules (clients/lua/README.md and the
// thin-client contract: a command's script is its manifest prefix followed
// by ratelimit.lua; KEYS are its keys, ARGV the head and the other
// arguments). luadist/ is a copy of clients/lua/dist made by go generate
// (go:embed cannot reach outside the module); TestEmbeddedScriptsAreDist
// checks it byte-equal to the original.

//go:generate cp ../lua/dist/ratelimit.lua ../lua/dist/manifest.json luadist/

//go:embed luadist/ratelimit.lua
var scriptBody []byte

//go:embed luadist/manifest.json
var scriptManifest []byte

// timeRefused starts the error of a script whose server refuses TIME.
const timeRefused = "ERR ratelimit: TIME refused in scripts:"

type script struct {
	source   string
	sha      string
	keys     string // the manifest's keys: "first", "numkeys" or "none"
	readonly bool
}

var (
	scriptsOnce sync.Once
	scripts     map[string]*script
	scriptsErr  error
)

func loadScripts() (map[string]*script, error) {
	scriptsOnce.Do(func() {
		var m struct {
			Commands map[string]struct {
				Prefix   string `json:"prefix"`
				Keys     string `json:"keys"`
				Readonly bool   `json:"readonly"`
			} `json:"commands"`
		}
		if err := json.Unmarshal(scriptManifest, &m); err != nil {
			scriptsErr = fmt.Errorf("ratelimit: the embedded luadist/manifest.json: %w", err)
			return
		}
		scripts = make(map[string]*script, len(m.Commands))
		for name, c := range m.Commands {
			src := c.Prefix + string(scriptBody)
			sum := sha1.Sum([]byte(src))
			scripts[strings.ToUpper(name)] = &script{source: src, sha: hex.EncodeToString(sum[:]), keys: c.Keys, readonly: c.Readonly}
		}
	})
	return scripts, scriptsErr
}

// ScriptSource is the whole script that answers command ("RL.THROTTLE"),
// as EVAL sends it, and whether the scripts answer it at all.
func ScriptSource(command string) (string, bool) {
	s, err := loadScripts()
	if err != nil {
		return "", false
	}
	sc, ok := s[strings.ToUpper(command)]
	if !ok {
		return "", false
	}
	return sc.source, true
}

// splitKeys takes the keys out of a command line's arguments, as the
// manifest's keys say: "first", the first argument; "numkeys", RL.ALLOW's
// numkeys keys when numkeys is 1 to 16 and that many follow (else none:
// the script answers the module's error); "none" (RL.TOP), none.
func splitKeys(mode string, args []any) (keys []string, rest []any) {
	switch mode {
	case "none":
		return nil, args
	case "first":
		if len(args) == 0 {
			return nil, nil
		}
		return []string{argString(args[0])}, args[1:]
	}
	if len(args) == 0 {
		return nil, args
	}
	k, err := strconv.Atoi(argString(args[0]))
	if err != nil || k < 1 || k > 16 || len(args) < 1+k || !isDecimal(argString(args[0])) {
		return nil, args
	}
	keys = make([]string, k)
	for i := range keys {
		keys[i] = argString(args[1+i])
	}
	rest = make([]any, 0, len(args)-k)
	rest = append(rest, args[0])
	rest = append(rest, args[1+k:]...)
	return keys, rest
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Head is ARGV[1] of a script call: clock ("" for the script's TIME, else
// Unix microseconds) and a segment per distinct zone argument (one that
// follows an argument TZ among rest, the arguments that are not keys) that
// the zone database knows, computed around now.
func Head(clock string, rest []any, now time.Time) string {
	var b strings.Builder
	b.WriteString(clock)
	var seen []string
	for i := 0; i+1 < len(rest); i++ {
		if !strings.EqualFold(argString(rest[i]), "TZ") {
			continue
		}
		written := argString(rest[i+1])
		dup := false
		for _, s := range seen {
			dup = dup || s == written
		}
		if dup {
			continue
		}
		seen = append(seen, written)
		if seg, ok := zoneSegment(written, now); ok {
			b.WriteByte(';')
			b.WriteString(seg)
		}
	}
	return b.String()
}

func (l *Limiter) runScript(ctx context.Context, command string, args []any) (any, error) {
	all, err := loadScripts()
	if err != nil {
		return nil, err
	}
	sc, ok := all[command]
	if !ok {
		return nil, &BackendError{Message: command + " is not answered by the Lua backend's scripts (it needs the module)"}
	}
	keys, rest := splitKeys(sc.keys, args)
	reply, err := l.evalOnce(ctx, sc, keys, rest)
	if err != nil && l.clock == ClockAuto && !l.clientClock.Load() && strings.HasPrefix(err.Error(), timeRefused) {
		l.clientClock.Store(true)
		reply, err = l.evalOnce(ctx, sc, keys, rest)
	}
	return reply, err
}

func (l *Limiter) evalOnce(ctx context.Context, sc *script, keys []string, rest []any) (any, error) {
	clock, now, err := l.scriptClock(ctx)
	if err != nil {
		return nil, err
	}
	argv := make([]any, 0, len(rest)+1)
	argv = append(argv, Head(clock, rest, now))
	argv = append(argv, rest...)
	var cmd *redis.Cmd
	if sc.readonly {
		cmd = l.rdb.EvalShaRO(ctx, sc.sha, keys, argv...)
	} else {
		cmd = l.rdb.EvalSha(ctx, sc.sha, keys, argv...)
	}
	reply, err := cmd.Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		if sc.readonly {
			cmd = l.rdb.EvalRO(ctx, sc.source, keys, argv...)
		} else {
			cmd = l.rdb.Eval(ctx, sc.source, keys, argv...)
		}
		reply, err = cmd.Result()
	}
	return reply, err
}

// serverClock is the server's clock as the client passes it: TIME read
// outside the scripts (INFO server's server_time_usec where an ACL refuses
// TIME), carried forward on the monotonic clock, re-read every minute.
type serverClock struct {
	mu     sync.Mutex
	baseUS int64
	at     time.Time // with its monotonic reading
}

const clockReread = time.Minute

func (c *serverClock) now(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < clockReread {
		return c.baseUS + time.Since(c.at).Microseconds(), nil
	}
	before := time.Now()
	us, err := readServerTime(ctx, rdb)
	if err != nil {
		return 0, err
	}
	c.baseUS, c.at = us, before
	return us, nil
}

func readServerTime(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	t, err := rdb.Time(ctx).Result()
	if err == nil {
		return t.UnixMicro(), nil
	}
	if !isReply(err) {
		return 0, err
	}
	info, err2 := rdb.Info(ctx, "server").Result()
	if err2 != nil {
		return 0, fmt.Errorf("ratelimit: the server's clock: TIME: %v; INFO server: %w", err, err2)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "server_time_usec:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("ratelimit: the server's clock: TIME: %v; INFO server has no server_time_usec", err)
}

// runScripts is runScript for several calls in one pipeline. A call
// answered NOSCRIPT, or the TIME refusal that switches to the passed clock,
// did nothing: those are sent again (EVAL; the passed clock), in one more
// pipeline.
func (l *Limiter) runScripts(ctx context.Context, calls []Call, replies []any, errs []error) {
	all, err := loadScripts()
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return
	}
	type prepared struct {
		sc   *script
		keys []string
		rest []any
	}
	ps := make([]prepared, len(calls))
	todo := make([]int, 0, len(calls))
	for i, c := range calls {
		sc, ok := all[scriptName(c.Name)]
		if !ok {
			errs[i] = &BackendError{Message: "RL." + c.Name + " is not answered by the Lua backend's scripts (it needs the module)"}
			continue
		}
		keys, rest := splitKeys(sc.keys, c.Args)
		ps[i] = prepared{sc, keys, rest}
		todo = append(todo, i)
	}
	source := false
	for round := 0; round < 3 && len(todo) > 0; round++ {
		clock, now, err := l.scriptClock(ctx)
		if err != nil {
			for _, i := range todo {
				errs[i] = err
			}
			return
		}
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(todo))
		for j, i := range todo {
			p := ps[i]
			argv := make([]any, 0, len(p.rest)+1)
			argv = append(argv, Head(clock, p.rest, now))
			argv = append(argv, p.rest...)
			switch {
			case source && p.sc.readonly:
				cmds[j] = pipe.EvalRO(ctx, p.sc.source, p.keys, argv...)
			case source:
				cmds[j] = pipe.Eval(ctx, p.sc.source, p.keys, argv...)
			case p.sc.readonly:
				cmds[j] = pipe.EvalShaRO(ctx, p.sc.sha, p.keys, argv...)
			default:
				cmds[j] = pipe.EvalSha(ctx, p.sc.sha, p.keys, argv...)
			}
		}
		_, _ = pipe.Exec(ctx)
		again := todo[:0:0]
		for j, i := range todo {
			replies[i], errs[i] = cmds[j].Result()
			if errs[i] == nil {
				continue
			}
			text := errs[i].Error()
			switch {
			case strings.HasPrefix(text, "NOSCRIPT"):
				source = true
				again = append(again, i)
			case strings.HasPrefix(text, timeRefused) && l.clock == ClockAuto && !l.clientClock.Load():
				again = append(again, i)
			}
		}
		for _, i := range again {
			if strings.HasPrefix(errs[i].Error(), timeRefused) {
				l.clientClock.Store(true)
			}
		}
		todo = again
	}
}

// scriptClock is the head's clock ("" for the script's TIME, or the
// passed Unix microseconds) and the instant the zones are computed around.
func (l *Limiter) scriptClock(ctx context.Context) (string, time.Time, error) {
	if !l.clientClock.Load() {
		return "", l.wallNow(), nil
	}
	us, err := l.server.now(ctx, l.rdb)
	if err != nil {
		return "", time.Time{}, err
	}
	return strconv.FormatInt(us, 10), time.UnixMicro(us), nil
}
