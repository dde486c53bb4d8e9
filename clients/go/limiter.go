package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The typed calls: one per command of the module. Every call sends its
// times in milliseconds (MS), passes its numbers through unchecked (the
// module, or the scripts, name a refused argument in a CommandError) and
// answers the reply as typed values.

// five sends line (line[0] reserved for the command's name) and reads
// the five fields.
func (l *Limiter) five(ctx context.Context, name string, line []any) (Result, error) {
	reply, err := l.exec(ctx, name, line)
	if err != nil {
		return Result{}, err
	}
	return parseResult(name, reply)
}

func line(key string, numbers []any, quantity int64, options ...any) []any {
	a := make([]any, 1, 4+len(numbers)+len(options))
	a = append(a, key)
	a = append(a, numbers...)
	a = append(a, itoa(quantity), "MS")
	return append(a, options...)
}

// single is a single command's line (its first element reserved for the
// command's name, as every line builder's here): key, the kind's numbers, quantity,
// MS, its own options (PRECISION, TZ), then extra (MAXWAIT) and the
// limit's BLOCK, UNITS and SHADOW (the module refuses the last two on a
// single command: they are passed through, for it to say so).
func single(key string, limit Limit, quantity int64, extra ...any) ([]any, error) {
	n, err := limit.args()
	if err != nil {
		return nil, err
	}
	o, err := limit.own()
	if err != nil {
		return nil, err
	}
	t, err := limit.tail()
	if err != nil {
		return nil, err
	}
	a := make([]any, 1, 4+len(n)+len(o)+len(extra)+len(t))
	a = append(a, key)
	a = append(a, n...)
	a = append(a, itoa(quantity), "MS")
	a = append(a, o...)
	a = append(a, extra...)
	return append(a, t...), nil
}

func (l *Limiter) one(ctx context.Context, key string, limit Limit, quantity int64) (Result, error) {
	a, err := single(key, limit, quantity)
	if err != nil {
		return Result{}, err
	}
	return l.five(ctx, limit.Kind(), a)
}

// Throttle is RL.THROTTLE key max_burst count period quantity MS [BLOCK b]:
// GCRA. Quantity 0 peeks.
func (l *Limiter) Throttle(ctx context.Context, key string, limit Throttle, quantity int64) (Result, error) {
	return l.one(ctx, key, limit, quantity)
}

// Slide is RL.SLIDE key limit window quantity MS [PRECISION d] [BLOCK b]:
// the exact sliding log.
func (l *Limiter) Slide(ctx context.Context, key string, limit Slide, quantity int64) (Result, error) {
	return l.one(ctx, key, limit, quantity)
}

// Slice is RL.SLICE key limit window slices quantity MS [BLOCK b].
func (l *Limiter) Slice(ctx context.Context, key string, limit Slice, quantity int64) (Result, error) {
	return l.one(ctx, key, limit, quantity)
}

// Quota is RL.QUOTA key limit unit quantity MS [TZ zone] [BLOCK b]: a
// calendar quota.
func (l *Limiter) Quota(ctx context.Context, key string, limit Quota, quantity int64) (Result, error) {
	return l.one(ctx, key, limit, quantity)
}

// Lease is RL.LEASE key limit ttl lease_id quantity MS: takes, or renews,
// the lease leaseID. Hold holds one and renews it for you.
func (l *Limiter) Lease(ctx context.Context, key string, limit Lease, leaseID string, quantity int64) (Result, error) {
	n, err := limit.args()
	if err != nil {
		return Result{}, err
	}
	t, err := limit.tail()
	if err != nil {
		return Result{}, err
	}
	return l.five(ctx, "LEASE", line(key, append(n, leaseID), quantity, t...))
}

// Release is RL.RELEASE key lease_id: true when the lease was held.
func (l *Limiter) Release(ctx context.Context, key, leaseID string) (bool, error) {
	reply, err := l.exec(ctx, "RELEASE", []any{nil, key, leaseID})
	if err != nil {
		return false, err
	}
	n, ok := reply.(int64)
	if !ok {
		return false, fmt.Errorf("ratelimit: RL.RELEASE answered %v, not an integer", reply)
	}
	return n == 1, nil
}

// Rule is one limit of RL.ALLOW and RL.PEEK: a key and its limit. Name
// names it in the header fields (Headers); it is not sent.
type Rule struct {
	Name  string
	Key   string
	Limit Limit
}

// AllowOptions are RL.ALLOW's and RL.PEEK's options.
type AllowOptions struct {
	// Quantity is what the request costs of every limit (QUANTITY); 0
	// means 1. To ask without taking anything, use Peek.
	Quantity int64
	// LeaseID names the lease that LEASE rules take (ID).
	LeaseID string
	// MaxWait, when not nil, is MAXWAIT (every rule THROTTLE): a request
	// that would be allowed within it is granted its turn now, and the
	// result's RetryAfter is the wait until it (AcquireAll waits it).
	MaxWait *time.Duration
}

// Wait is a MaxWait of d: AllowOptions{MaxWait: ratelimit.Wait(time.Second)}.
func Wait(d time.Duration) *time.Duration { return &d }

func severalLine(rules []Rule, o AllowOptions) ([]any, error) {
	if len(rules) == 0 {
		return nil, &ArgumentError{Argument: "rules", Message: "rules must hold 1 to 16 limits, not none"}
	}
	a := make([]any, 2, 2+6*len(rules)+7)
	a[1] = itoa(int64(len(rules)))
	for _, r := range rules {
		a = append(a, r.Key)
	}
	for i, r := range rules {
		if r.Limit == nil {
			return nil, &ArgumentError{Argument: "rules", Message: fmt.Sprintf("rule %d has no limit", i+1)}
		}
		var err error
		if a, err = r.Limit.appendSpec(a, true); err != nil {
			return nil, err
		}
	}
	q := o.Quantity
	if q == 0 {
		q = 1
	}
	a = append(a, "QUANTITY", itoa(q), "MS")
	if o.MaxWait != nil {
		w, err := millis("max_wait", *o.MaxWait)
		if err != nil {
			return nil, err
		}
		a = append(a, "MAXWAIT", w)
	}
	if o.LeaseID != "" {
		a = append(a, "ID", o.LeaseID)
	}
	return a, nil
}

// Allow is RL.ALLOW: every rule decided at once; allowed only when every
// limit allows, then every key records it; refused, nothing is recorded.
func (l *Limiter) Allow(ctx context.Context, rules []Rule, o AllowOptions) (AllowResult, error) {
	return l.several(ctx, "ALLOW", rules, o)
}

// Peek is RL.PEEK: what Allow would answer, changing nothing (read-only:
// it works on replicas).
func (l *Limiter) Peek(ctx context.Context, rules []Rule, o AllowOptions) (AllowResult, error) {
	return l.several(ctx, "PEEK", rules, o)
}

func (l *Limiter) several(ctx context.Context, name string, rules []Rule, o AllowOptions) (AllowResult, error) {
	a, err := severalLine(rules, o)
	if err != nil {
		return AllowResult{}, err
	}
	reply, err := l.exec(ctx, name, a)
	if err != nil {
		return AllowResult{}, err
	}
	return parseAllowResult(name, reply)
}

// Refund is RL.REFUND key spec quantity MS: gives back up to quantity
// recorded units (not of a LEASE: Release gives a lease back).
func (l *Limiter) Refund(ctx context.Context, key string, limit Limit, quantity int64) (Result, error) {
	a, err := giveLine(key, limit, quantity)
	if err != nil {
		return Result{}, err
	}
	return l.five(ctx, "REFUND", a)
}

// Charge is RL.CHARGE key spec quantity MS: records quantity units now,
// unconditionally, even past the limit (the key is then in debt: refused
// until it is paid back). For a cost known only afterwards; Settle gives
// back or charges the difference to an estimate.
func (l *Limiter) Charge(ctx context.Context, key string, limit Limit, quantity int64) (Result, error) {
	a, err := giveLine(key, limit, quantity)
	if err != nil {
		return Result{}, err
	}
	return l.five(ctx, "CHARGE", a)
}

// giveLine is RL.REFUND's and RL.CHARGE's line: the spec without BLOCK,
// UNITS and SHADOW.
func giveLine(key string, limit Limit, quantity int64) ([]any, error) {
	if limit == nil {
		return nil, &ArgumentError{Argument: "limit", Message: "no limit"}
	}
	a := make([]any, 2, 12)
	a[1] = key
	a, err := limit.appendSpec(a, false)
	if err != nil {
		return nil, err
	}
	return append(a, itoa(quantity), "MS"), nil
}

// Inspection is RL.INSPECT's answer: what the key holds.
type Inspection struct {
	// Type is the kind: throttle, slide, slice, lease or quota.
	Type string
	// TTL is the key's remaining life.
	TTL time.Duration
	// Memory is the key's size in bytes.
	Memory int64
	// Fields are every field as answered (integers int64, texts string,
	// lists []any), the three above included.
	Fields map[string]any
}

// Inspect is RL.INSPECT key; nil (and no error) when the key is missing.
func (l *Limiter) Inspect(ctx context.Context, key string) (*Inspection, error) {
	reply, err := l.exec(ctx, "INSPECT", []any{nil, key})
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	fields := map[string]any{}
	switch v := reply.(type) {
	case nil:
		return nil, nil
	case map[any]any:
		for k, x := range v {
			fields[argString(k)] = x
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			fields[argString(v[i])] = v[i+1]
		}
	default:
		return nil, fmt.Errorf("ratelimit: RL.INSPECT answered %v, not field-value pairs", reply)
	}
	in := &Inspection{Fields: fields}
	in.Type, _ = fields["type"].(string)
	ttl, _ := fields["ttl"].(int64)
	in.TTL = time.Duration(ttl) * time.Millisecond
	in.Memory, _ = fields["memory"].(int64)
	return in, nil
}
