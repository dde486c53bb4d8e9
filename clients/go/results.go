package ratelimit

import (
	"fmt"
	"time"
)

// Result is the module's five-field reply, with its times as durations
// (the calls send MS, so they are exact to the millisecond, rounded up).
type Result struct {
	// Allowed: the request was allowed (field 1 is 0).
	Allowed bool
	// Limit is the capacity: MaxBurst+1 for THROTTLE, the limit otherwise.
	Limit int64
	// Remaining is the units that could still be taken right now.
	Remaining int64
	// RetryAfter, when refused, is the time after which this same request
	// would be allowed if nothing else arrived; 0 when allowed, and 0 with
	// NeverFits when it can never fit.
	RetryAfter time.Duration
	// NeverFits: refused because the quantity exceeds the capacity
	// (field 4 is -1 while field 1 is 1).
	NeverFits bool
	// ResetAfter is the time until the limiter is back to full capacity.
	ResetAfter time.Duration
}

// AllowResult is RL.ALLOW's and RL.PEEK's reply: the binding limit's five
// fields (Result), its index in the rules (0-based), and every limit's own.
type AllowResult struct {
	Result
	// Index is the binding limit's position in the rules, from 0.
	Index int
	// Results are every limit's own five fields, in the rules' order.
	Results []Result
}

func asInt(v any) (int64, bool) {
	n, ok := v.(int64)
	return n, ok
}

// parseResult reads five integers, times in milliseconds; name is the
// command's, without prefix, for the error.
func parseResult(name string, reply any) (Result, error) {
	a, ok := reply.([]any)
	if !ok || len(a) < 5 {
		return Result{}, fmt.Errorf("ratelimit: RL.%s answered %v, not five integers", name, reply)
	}
	var n [5]int64
	for i := range n {
		v, ok := asInt(a[i])
		if !ok {
			return Result{}, fmt.Errorf("ratelimit: RL.%s answered %v, not five integers", name, reply)
		}
		n[i] = v
	}
	r := Result{Allowed: n[0] == 0, Limit: n[1], Remaining: n[2], ResetAfter: time.Duration(n[4]) * time.Millisecond}
	switch {
	case n[3] >= 0:
		r.RetryAfter = time.Duration(n[3]) * time.Millisecond
	case !r.Allowed:
		r.NeverFits = true
	}
	return r, nil
}

func parseAllowResult(name string, reply any) (AllowResult, error) {
	a, ok := reply.([]any)
	if !ok || len(a) != 7 {
		return AllowResult{}, fmt.Errorf("ratelimit: RL.%s answered %v, not seven elements", name, reply)
	}
	binding, err := parseResult(name, a)
	if err != nil {
		return AllowResult{}, err
	}
	index, ok := asInt(a[5])
	each, ok2 := a[6].([]any)
	if !ok || !ok2 || index < 1 || int(index) > len(each) {
		return AllowResult{}, fmt.Errorf("ratelimit: RL.%s answered %v, not a binding index and its limits", name, reply)
	}
	out := AllowResult{Result: binding, Index: int(index) - 1, Results: make([]Result, len(each))}
	for i, r := range each {
		if out.Results[i], err = parseResult(name, r); err != nil {
			return AllowResult{}, err
		}
	}
	return out, nil
}
