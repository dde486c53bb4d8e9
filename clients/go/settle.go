package ratelimit

import (
	"context"
	"fmt"
)

// Settle squares an estimate with the actual cost, known afterwards (an
// LLM call's tokens): for each rule, RL.REFUND of taken - actual when it
// cost less, RL.CHARGE of actual - taken when it cost more, nothing when
// equal; all in one round trip (one pipeline). taken and actual are the
// same for every rule; SettleEach takes one per rule. The results are in
// the rules' order, nil for a rule where nothing was sent; err is the
// first call's error (the others are still sent and answered).
func (l *Limiter) Settle(ctx context.Context, rules []Rule, taken, actual int64) ([]*Result, error) {
	t := make([]int64, len(rules))
	a := make([]int64, len(rules))
	for i := range rules {
		t[i], a[i] = taken, actual
	}
	return l.SettleEach(ctx, rules, t, a)
}

// SettleEach is Settle with taken[i] and actual[i] for rules[i].
func (l *Limiter) SettleEach(ctx context.Context, rules []Rule, taken, actual []int64) ([]*Result, error) {
	if len(taken) != len(rules) || len(actual) != len(rules) {
		return nil, &ArgumentError{Argument: "taken", Message: fmt.Sprintf("%d rules, %d taken, %d actual: one of each per rule", len(rules), len(taken), len(actual))}
	}
	calls := make([]Call, 0, len(rules))
	at := make([]int, 0, len(rules))
	for i, r := range rules {
		name, q := "REFUND", taken[i]-actual[i]
		if q == 0 {
			continue
		}
		if q < 0 {
			name, q = "CHARGE", -q
		}
		a, err := giveLine(r.Key, r.Limit, q)
		if err != nil {
			return nil, err
		}
		calls = append(calls, Call{Name: name, Args: a[1:]})
		at = append(at, i)
	}
	out := make([]*Result, len(rules))
	replies, errs := l.DoAll(ctx, calls)
	var first error
	for j, i := range at {
		if errs[j] != nil {
			first = firstErr(first, errs[j])
			continue
		}
		r, err := parseResult(calls[j].Name, replies[j])
		if err != nil {
			first = firstErr(first, err)
			continue
		}
		out[i] = &r
	}
	return out, first
}

func firstErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// AllowEach decides each rule by its own RL.ALLOW (1 key, 1 spec), all in
// one round trip: each is allowed or refused alone, unlike Allow. (The
// middleware uses it when every rule of a request is SHADOW, which one
// RL.ALLOW refuses.) err is the first call's error.
func (l *Limiter) AllowEach(ctx context.Context, rules []Rule, o AllowOptions) ([]AllowResult, error) {
	calls := make([]Call, len(rules))
	for i, r := range rules {
		a, err := severalLine([]Rule{r}, o)
		if err != nil {
			return nil, err
		}
		calls[i] = Call{Name: "ALLOW", Args: a[1:]}
	}
	replies, errs := l.DoAll(ctx, calls)
	out := make([]AllowResult, len(rules))
	var first error
	for i := range calls {
		if errs[i] != nil {
			first = firstErr(first, errs[i])
			continue
		}
		r, err := parseAllowResult("ALLOW", replies[i])
		if err != nil {
			first = firstErr(first, err)
			continue
		}
		out[i] = r
	}
	return out, first
}
