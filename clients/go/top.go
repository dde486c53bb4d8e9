package ratelimit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// TopEntry is one key of RL.TOP: refused Refusals times recently (decayed,
// rounded down), last at LastRefusal.
type TopEntry struct {
	Key         string
	Refusals    int64
	LastRefusal time.Time
}

// topDefault is RL.TOP's count without COUNT.
const topDefault = 10

// Top is RL.TOP [COUNT count] (count 0: the module's default, 10): the
// keys refused most often recently, most first. Each master of a cluster
// answers for its own keys: on a *redis.ClusterClient, Top asks every
// master and merges their answers in the module's order (refusals, then
// the later last refusal, then the key's bytes), cut to count; a key
// lives on one master, so the merge is exact. The Lua backend keeps no
// summary: its script answers an error, a CommandError.
func (l *Limiter) Top(ctx context.Context, count int) ([]TopEntry, error) {
	var args []any
	if count != 0 {
		args = []any{"COUNT", itoa(int64(count))}
	}
	if cc, ok := l.rdb.(*redis.ClusterClient); ok {
		r, err := l.backend(ctx)
		if err != nil {
			return nil, err
		}
		if r.module {
			return topOfMasters(ctx, cc, r.command("TOP"), args, count)
		}
	}
	reply, err := l.Do(ctx, "TOP", args...)
	if err != nil {
		return nil, err
	}
	return parseTop(reply)
}

// topOfMasters is RL.TOP asked of every master of cc, merged.
func topOfMasters(ctx context.Context, cc *redis.ClusterClient, name string, args []any, count int) ([]TopEntry, error) {
	var mu sync.Mutex
	var all []TopEntry
	line := append([]any{name}, args...)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		reply, err := node.Do(ctx, line...).Result()
		if err != nil {
			return replyError("RL.TOP", err)
		}
		part, err := parseTop(reply)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		all = append(all, part...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return mergeTop(all, count), nil
}

// mergeTop is the masters' entries in RL.TOP's order (most refusals
// first, then the later last refusal, then the key's bytes ascending),
// the first count of them (0: the module's default).
func mergeTop(all []TopEntry, count int) []TopEntry {
	slices.SortFunc(all, func(a, b TopEntry) int {
		if c := cmp.Compare(b.Refusals, a.Refusals); c != 0 {
			return c
		}
		if c := b.LastRefusal.Compare(a.LastRefusal); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	if count == 0 {
		count = topDefault
	}
	return all[:min(count, len(all))]
}

func parseTop(reply any) ([]TopEntry, error) {
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
