// The Go package's Lua backend as a conformance backend ("go-lua"):
// Limiter.Do of github.com/redis-ratelimit/redis-ratelimit/clients/go
// with WithBackend(BackendLua), over go-redis (RESP2), driven over JSON
// lines exactly as node_driver.js and java_driver.java:
//
//	tmp/go/bin/conformance-driver <port>    (built by make go-driver)
//
// First line out: {"ready": true, "package": <the module and version>,
// "backend": "lua"}. Then, per line in, {"cmd": [arg, ...], "now": <Unix
// seconds, optional>, "clock": "server" | "client" (optional)}, an argument
// a JSON string (UTF-8) or {"hex": "..."} (those bytes); one line out:
// {"reply": value}, every string of the reply as {"hex": "..."}, integers,
// nulls and arrays as they are; or {"error": <the error reply's text>}; or
// {"fatal": <message>}. With RL_LUA_NO_TIME=1 every call gets a Limiter of
// its own, so that the server's clock passed is read at every call (the
// faked clock jumps between steps).
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
)

const module = "github.com/redis-ratelimit/redis-ratelimit/clients/go"

type request struct {
	Cmd   []json.RawMessage `json:"cmd"`
	Now   *float64          `json:"now"`
	Clock string            `json:"clock"`
}

func arg(raw json.RawMessage) (any, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var h struct {
		Hex *string `json:"hex"`
	}
	if err := json.Unmarshal(raw, &h); err != nil || h.Hex == nil {
		return nil, fmt.Errorf("an argument is a string or {\"hex\": ...}, not %s", raw)
	}
	return hex.DecodeString(*h.Hex)
}

func encode(v any) any {
	switch x := v.(type) {
	case string:
		return map[string]string{"hex": hex.EncodeToString([]byte(x))}
	case []byte:
		return map[string]string{"hex": hex.EncodeToString(x)}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = encode(e)
		}
		return out
	}
	return v // int64, nil
}

// replyText is the error reply's text, or "" for an error that is not one.
func replyText(err error) string {
	var ce *ratelimit.CommandError
	var we *ratelimit.WrongTypeError
	var re redis.Error
	switch {
	case errors.As(err, &ce):
		return ce.Message
	case errors.As(err, &we):
		return we.Message
	case errors.As(err, &re) && !errors.Is(err, context.DeadlineExceeded):
		return re.Error()
	}
	return ""
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range info.Deps {
		if d.Path == module {
			if d.Replace != nil {
				return d.Path + " " + d.Version + " => " + d.Replace.Path
			}
			return d.Path + " " + d.Version
		}
	}
	return "unknown"
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance-driver <port>")
		os.Exit(2)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + os.Args[1], Protocol: 2})
	defer rdb.Close()
	noTime := os.Getenv("RL_LUA_NO_TIME") == "1"
	limiters := map[string]*ratelimit.Limiter{}
	limiter := func(r request) *ratelimit.Limiter {
		id := r.Clock
		opts := []ratelimit.Option{ratelimit.WithBackend(ratelimit.BackendLua)}
		if r.Now != nil {
			sec, frac := math.Modf(*r.Now)
			at := time.Unix(int64(sec), int64(math.Floor(frac*1e3))*1e6)
			opts = append(opts, ratelimit.WithWallClock(func() time.Time { return at }))
			id += fmt.Sprintf(" %d", at.UnixMilli())
		}
		switch r.Clock {
		case "client":
			opts = append(opts, ratelimit.WithClock(ratelimit.ClockClient))
		case "server":
			opts = append(opts, ratelimit.WithClock(ratelimit.ClockServer))
		}
		if l, ok := limiters[id]; ok && !noTime {
			return l
		}
		l := ratelimit.New(rdb, opts...)
		limiters[id] = l
		return l
	}
	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(map[string]any{"ready": true, "package": version(), "backend": "lua"})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	ctx := context.Background()
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var r request
		if err := json.Unmarshal([]byte(line), &r); err != nil || len(r.Cmd) == 0 {
			_ = out.Encode(map[string]any{"fatal": fmt.Sprintf("a request %q: %v", line, err)})
			continue
		}
		args := make([]any, len(r.Cmd))
		var bad error
		for i, raw := range r.Cmd {
			if args[i], bad = arg(raw); bad != nil {
				break
			}
		}
		if bad != nil {
			_ = out.Encode(map[string]any{"fatal": bad.Error()})
			continue
		}
		name := fmt.Sprint(args[0])
		if b, ok := args[0].([]byte); ok {
			name = string(b)
		}
		upper := strings.ToUpper(name)
		if !strings.HasPrefix(upper, "RL.") {
			_ = out.Encode(map[string]any{"fatal": "not a command of the module: " + name})
			continue
		}
		reply, err := limiter(r).Do(ctx, upper[len("RL."):], args[1:]...)
		switch {
		case errors.Is(err, redis.Nil):
			_ = out.Encode(map[string]any{"reply": nil})
		case err != nil && replyText(err) != "":
			_ = out.Encode(map[string]any{"error": replyText(err)})
		case err != nil:
			_ = out.Encode(map[string]any{"fatal": err.Error()})
		default:
			_ = out.Encode(map[string]any{"reply": encode(reply)})
		}
	}
}
