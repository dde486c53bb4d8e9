package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backend chooses what answers the commands.
type Backend int

const (
	// BackendAuto is the module when the server has it loaded (detected
	// once, with its PREFIX), else the Lua scripts.
	BackendAuto Backend = iota
	// BackendModule is the module; a server without it is a BackendError.
	BackendModule
	// BackendLua is the scripts, even where the module is loaded.
	BackendLua
)

func (b Backend) String() string {
	switch b {
	case BackendModule:
		return "module"
	case BackendLua:
		return "lua"
	}
	return "auto"
}

// Clock chooses the clock of the Lua backend's scripts.
type Clock int

const (
	// ClockAuto is the server's TIME read in the script, until a server
	// refuses TIME in scripts: then, for good, the client-passed clock.
	ClockAuto Clock = iota
	// ClockServer is always the script's TIME.
	ClockServer
	// ClockClient is always the client-passed clock: the server's TIME
	// read outside the script, carried forward on the monotonic clock.
	ClockClient
)

// An Option configures New.
type Option func(*Limiter)

// WithBackend forces a backend (default BackendAuto).
func WithBackend(b Backend) Option { return func(l *Limiter) { l.choice = b } }

// WithPrefix names the module's command prefix (its load-time PREFIX
// option) instead of detecting it; it also skips the detection of a
// forced BackendModule.
func WithPrefix(prefix string) Option { return func(l *Limiter) { l.prefix = prefix } }

// WithClock sets the Lua backend's clock (default ClockAuto).
func WithClock(c Clock) Option { return func(l *Limiter) { l.clock = c } }

// WithWallClock sets the clock the Lua backend computes a zone's offsets
// around (default time.Now): a test's fixed instant.
func WithWallClock(now func() time.Time) Option { return func(l *Limiter) { l.wall = now } }

// Limiter sends the module's commands over a go-redis v9 client (single
// node, cluster, sentinel: any redis.UniversalClient) and answers typed
// results. It is safe for concurrent use.
type Limiter struct {
	rdb    redis.UniversalClient
	choice Backend
	prefix string
	clock  Clock
	wall   func() time.Time

	resolved atomic.Pointer[resolved]
	mu       sync.Mutex // held while detecting

	clientClock atomic.Bool // the scripts' clock is passed (TIME refused, or ClockClient)
	server      serverClock
}

// resolved is the backend found: the module under prefix, or the scripts.
type resolved struct {
	module bool
	prefix string
	names  map[string]string // prefix + "." + each of commandNames
}

func moduleResolved(prefix string) *resolved {
	r := &resolved{module: true, prefix: prefix, names: make(map[string]string, len(commandNames))}
	for _, n := range commandNames {
		r.names[n] = prefix + "." + n
	}
	return r
}

// New makes a Limiter over rdb. Nothing is sent until the first call.
func New(rdb redis.UniversalClient, opts ...Option) *Limiter {
	l := &Limiter{rdb: rdb}
	for _, o := range opts {
		o(l)
	}
	if l.clock == ClockClient {
		l.clientClock.Store(true)
	}
	return l
}

func (l *Limiter) wallNow() time.Time {
	if l.wall != nil {
		return l.wall()
	}
	return time.Now()
}

// Client is the go-redis client the Limiter sends over.
func (l *Limiter) Client() redis.UniversalClient { return l.rdb }

// BackendInUse detects the backend if not done yet and says which answers:
// BackendModule (with its prefix) or BackendLua.
func (l *Limiter) BackendInUse(ctx context.Context) (Backend, string, error) {
	r, err := l.backend(ctx)
	if err != nil {
		return BackendAuto, "", err
	}
	if r.module {
		return BackendModule, r.prefix, nil
	}
	return BackendLua, "", nil
}

func (l *Limiter) backend(ctx context.Context) (*resolved, error) {
	if r := l.resolved.Load(); r != nil {
		return r, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.resolved.Load(); r != nil {
		return r, nil
	}
	r, err := l.detect(ctx)
	if err != nil {
		return nil, err
	}
	l.resolved.Store(r)
	return r, nil
}

func (l *Limiter) detect(ctx context.Context) (*resolved, error) {
	if l.choice == BackendLua {
		return &resolved{}, nil
	}
	if l.choice == BackendModule && l.prefix != "" {
		return moduleResolved(l.prefix), nil
	}
	found, err := detectPrefix(ctx, l.rdb)
	if err != nil {
		return nil, err
	}
	switch {
	case found != "":
		if l.prefix != "" {
			found = l.prefix
		}
		return moduleResolved(found), nil
	case l.choice == BackendModule:
		return nil, &BackendError{Message: "the redis-ratelimit module is not loaded on this server " +
			"(COMMAND LIST FILTERBY MODULE ratelimit is empty): load it (loadmodule /path/to/libredis_ratelimit.so), " +
			"or use WithBackend(ratelimit.BackendLua) or BackendAuto"}
	}
	return &resolved{}, nil
}

// detectPrefix is the module's command prefix on this server, or "" when
// it is not loaded: COMMAND LIST FILTERBY MODULE ratelimit; where that is
// refused (an ACL), COMMAND INFO RL.THROTTLE, which finds only the default.
func detectPrefix(ctx context.Context, rdb redis.UniversalClient) (string, error) {
	listed, err := rdb.Do(ctx, "COMMAND", "LIST", "FILTERBY", "MODULE", "ratelimit").StringSlice()
	if err != nil {
		if !isReply(err) {
			return "", err
		}
		info, err := rdb.Do(ctx, "COMMAND", "INFO", "RL.THROTTLE").Slice()
		if err != nil {
			return "", err
		}
		if len(info) > 0 && info[0] != nil {
			return "RL", nil
		}
		return "", nil
	}
	for _, name := range listed {
		if len(name) > len(".throttle") && strings.EqualFold(name[len(name)-len(".throttle"):], ".throttle") {
			return name[:len(name)-len(".throttle")], nil
		}
	}
	return "", nil
}

// isReply: err is an error reply of the server (not the network's).
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Do sends a module command line, name without prefix ("THROTTLE") and the
// module's exact arguments, through the backend in use, and answers the
// module's reply: error replies as CommandError or WrongTypeError.
func (l *Limiter) Do(ctx context.Context, name string, args ...any) (any, error) {
	line := make([]any, 1, len(args)+1)
	return l.exec(ctx, name, append(line, args...))
}

// exec is Do of line, whose first element is reserved for the command's
// name (so that the module's line is sent without a copy).
func (l *Limiter) exec(ctx context.Context, name string, line []any) (any, error) {
	r, err := l.backend(ctx)
	if err != nil {
		return nil, err
	}
	var reply any
	if r.module {
		line[0] = r.command(name)
		cmd := moduleCmd(ctx, name, line)
		_ = l.rdb.Process(ctx, cmd)
		reply, err = cmd.Result()
	} else {
		reply, err = l.runScript(ctx, scriptName(name), line[1:])
	}
	if err != nil {
		return nil, replyError(scriptName(name), err)
	}
	return reply, nil
}

// moduleCmd is line (the module's name of command name first) as a
// command that names its first key's position: a ClusterClient routes it
// to that key's master. Left to guess, go-redis takes position 1 while its
// COMMAND INFO cache is cold (RL.ALLOW's numkeys) and, once warm, the
// position COMMAND INFO gives a command with movable keys: either way
// RL.ALLOW and RL.PEEK would reach a node that answers MOVED.
func moduleCmd(ctx context.Context, name string, line []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, line...)
	switch name {
	case "ALLOW", "PEEK": // numkeys, then the keys
		cmd.SetFirstKeyPos(2)
	case "TOP": // no key: Top asks each master itself
	default:
		cmd.SetFirstKeyPos(1)
	}
	return cmd
}

// The module's commands, by name without prefix.
var commandNames = []string{"THROTTLE", "SLIDE", "SLICE", "LEASE", "RELEASE", "QUOTA", "ALLOW", "PEEK", "REFUND", "CHARGE", "INSPECT", "TOP"}

// rlNames are "RL." + each name (the scripts' manifest names them so).
var rlNames = func() map[string]string {
	m := make(map[string]string, len(commandNames))
	for _, n := range commandNames {
		m[n] = "RL." + n
	}
	return m
}()

func scriptName(name string) string {
	if n, ok := rlNames[name]; ok {
		return n
	}
	return "RL." + name
}

// command is the module's name of a command under this prefix.
func (r *resolved) command(name string) string {
	if n, ok := r.names[name]; ok {
		return n
	}
	return r.prefix + "." + name
}

func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	default:
		return fmt.Sprint(v)
	}
}

// Call is one command line for DoAll: Name without prefix ("REFUND") and
// the module's exact arguments.
type Call struct {
	Name string
	Args []any
}

// DoAll sends every call in one round trip (one go-redis pipeline: on the
// Lua backend, the EVALSHAs pipelined) and answers each call's reply and
// error, typed as Do types them, in the calls' order. A call is not
// atomic with the others: each is decided on its own.
func (l *Limiter) DoAll(ctx context.Context, calls []Call) ([]any, []error) {
	replies := make([]any, len(calls))
	errs := make([]error, len(calls))
	if len(calls) == 0 {
		return replies, errs
	}
	r, err := l.backend(ctx)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return replies, errs
	}
	if r.module {
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(calls))
		for i, c := range calls {
			line := make([]any, 0, len(c.Args)+1)
			line = append(line, r.command(c.Name))
			line = append(line, c.Args...)
			cmds[i] = moduleCmd(ctx, c.Name, line)
			_ = pipe.Process(ctx, cmds[i])
		}
		_, _ = pipe.Exec(ctx) // each command keeps its own error
		for i, cmd := range cmds {
			replies[i], errs[i] = cmd.Result()
		}
	} else {
		l.runScripts(ctx, calls, replies, errs)
	}
	for i, err := range errs {
		if err != nil {
			errs[i] = replyError(scriptName(calls[i].Name), err)
		}
	}
	return replies, errs
}
