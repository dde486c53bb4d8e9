package ratelimit

import (
	"context"
	"fmt"
	"time"
)

// TopEntry is one key of RL.TOP: refused Refusals times recently (decayed,
// rounded down), last at LastRefusal.
type TopEntry struct {
	Key         string
	Refusals    int64
	LastRefusal time.Time
}

// Top is RL.TOP [COUNT count] (count 0: the module's default): the keys
// this node refused most often recently, most first. Each master of a
// cluster answers for itself: ask each (docs/operations.md). The Lua
// backend keeps no summary: its script answers an error, a CommandError.
func (l *Limiter) Top(ctx context.Context, count int) ([]TopEntry, error) {
	var args []any
	if count != 0 {
		args = []any{"COUNT", itoa(int64(count))}
	}
	reply, err := l.Do(ctx, "TOP", args...)
	if err != nil {
		return nil, err
	}
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("ratelimit: RL.TOP answered %v, not an array", reply)
	}
	out := make([]TopEntry, len(rows))
	for i, row := range rows {
		f, ok := row.([]any)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ratelimit: RL.TOP answered %v, not [key, refusals, last_refusal_ms] rows", reply)
		}
		n, ok1 := asInt(f[1])
		ms, ok2 := asInt(f[2])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("ratelimit: RL.TOP answered %v, not [key, refusals, last_refusal_ms] rows", reply)
		}
		out[i] = TopEntry{Key: argString(f[0]), Refusals: n, LastRefusal: time.UnixMilli(ms)}
	}
	return out, nil
}
