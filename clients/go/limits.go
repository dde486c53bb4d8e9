package ratelimit

import (
	"fmt"
	"strconv"
	"time"
)

// A Limit is one limit of one of the module's kinds: Throttle, Slide,
// Slice, Lease or Quota. Its numbers are passed to the module (or the
// scripts) as they are: the ranges and their errors are the module's.
// Times are sent in milliseconds (the module's MS flag), so a time must be
// a whole number of milliseconds.
type Limit interface {
	// Kind is the module's word for the kind: THROTTLE, SLIDE, SLICE, LEASE or QUOTA.
	Kind() string
	// Spec is the limit as a spec of RL.ALLOW, RL.PEEK and RL.REFUND: the
	// kind's word, its numbers and its options.
	Spec() ([]any, error)
	// PolicyWindow is the w of the RateLimit-Policy field, in seconds; 0
	// for LEASE and QUOTA, which have none.
	PolicyWindow() int64
	isLimit()
}

// Throttle is GCRA (RL.THROTTLE): Count units per Period, in bursts of up
// to MaxBurst+1. The emission interval is Period/Count: a request costs
// that much of the bucket, which holds MaxBurst+1 of them.
type Throttle struct {
	MaxBurst int64
	Count    int64
	Period   time.Duration
}

// PerSecond, PerMinute and PerHour are Throttle limits of rate units per
// second, minute or hour, in bursts of up to burst units (burst >= 1).
func PerSecond(rate, burst int64) Throttle {
	return Throttle{MaxBurst: burst - 1, Count: rate, Period: time.Second}
}

// PerMinute: see PerSecond.
func PerMinute(rate, burst int64) Throttle {
	return Throttle{MaxBurst: burst - 1, Count: rate, Period: time.Minute}
}

// PerHour: see PerSecond.
func PerHour(rate, burst int64) Throttle {
	return Throttle{MaxBurst: burst - 1, Count: rate, Period: time.Hour}
}

// Slide is the exact sliding log (RL.SLIDE): at most Limit units in any
// Window. Precision, when not 0, groups units recorded less than it apart
// (RL.SLIDE's PRECISION option).
type Slide struct {
	Limit     int64
	Window    time.Duration
	Precision time.Duration
}

// Slice is the sliding window of Slices time slices (RL.SLICE): never more
// than Limit units in any interval of length Window.
type Slice struct {
	Limit  int64
	Window time.Duration
	Slices int64
}

// Lease is a concurrency limit (RL.LEASE): at most Limit units held at
// once, each lease expiring TTL after it was taken or renewed.
type Lease struct {
	Limit int64
	TTL   time.Duration
}

// Quota is a calendar quota (RL.QUOTA): at most Limit units in each Unit
// (MINUTE, HOUR, DAY, WEEK, MONTH, YEAR) of the local clock of Zone (an
// IANA name, UTC, or an offset such as +08:00; "" is UTC).
type Quota struct {
	Limit int64
	Unit  QuotaUnit
	Zone  string
}

// QuotaUnit is a calendar unit of RL.QUOTA.
type QuotaUnit string

// The calendar units.
const (
	Minute QuotaUnit = "MINUTE"
	Hour   QuotaUnit = "HOUR"
	Day    QuotaUnit = "DAY"
	Week   QuotaUnit = "WEEK"
	Month  QuotaUnit = "MONTH"
	Year   QuotaUnit = "YEAR"
)

func (Throttle) isLimit() {}
func (Slide) isLimit()    {}
func (Slice) isLimit()    {}
func (Lease) isLimit()    {}
func (Quota) isLimit()    {}

// Kind is THROTTLE.
func (Throttle) Kind() string { return "THROTTLE" }

// Kind is SLIDE.
func (Slide) Kind() string { return "SLIDE" }

// Kind is SLICE.
func (Slice) Kind() string { return "SLICE" }

// Kind is LEASE.
func (Lease) Kind() string { return "LEASE" }

// Kind is QUOTA.
func (Quota) Kind() string { return "QUOTA" }

// millis is a time as the module's milliseconds; a time that is not a
// whole number of them is an ArgumentError naming the argument.
func millis(name string, d time.Duration) (string, error) {
	if d%time.Millisecond != 0 {
		return "", &ArgumentError{Argument: name, Message: fmt.Sprintf("%s must be a whole number of milliseconds, not %v", name, d)}
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10), nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// args are the kind's numbers, as its own command takes them after the key.
func (t Throttle) args() ([]any, error) {
	p, err := millis("period", t.Period)
	if err != nil {
		return nil, err
	}
	return []any{itoa(t.MaxBurst), itoa(t.Count), p}, nil
}

func (s Slide) args() ([]any, error) {
	w, err := millis("window", s.Window)
	if err != nil {
		return nil, err
	}
	return []any{itoa(s.Limit), w}, nil
}

func (s Slide) options() ([]any, error) {
	if s.Precision == 0 {
		return nil, nil
	}
	d, err := millis("precision", s.Precision)
	if err != nil {
		return nil, err
	}
	return []any{"PRECISION", d}, nil
}

func (s Slice) args() ([]any, error) {
	w, err := millis("window", s.Window)
	if err != nil {
		return nil, err
	}
	return []any{itoa(s.Limit), w, itoa(s.Slices)}, nil
}

func (l Lease) args() ([]any, error) {
	ttl, err := millis("ttl", l.TTL)
	if err != nil {
		return nil, err
	}
	return []any{itoa(l.Limit), ttl}, nil
}

func (q Quota) args() ([]any, error) { return []any{itoa(q.Limit), string(q.Unit)}, nil }

func (q Quota) options() []any {
	if q.Zone == "" {
		return nil
	}
	return []any{"TZ", q.Zone}
}

// Spec is THROTTLE max_burst count period.
func (t Throttle) Spec() ([]any, error) { return spec(t.Kind(), t.args, nil) }

// Spec is SLIDE limit window [PRECISION d].
func (s Slide) Spec() ([]any, error) { return spec(s.Kind(), s.args, s.options) }

// Spec is SLICE limit window slices.
func (s Slice) Spec() ([]any, error) { return spec(s.Kind(), s.args, nil) }

// Spec is LEASE limit ttl.
func (l Lease) Spec() ([]any, error) { return spec(l.Kind(), l.args, nil) }

// Spec is QUOTA limit unit [TZ zone].
func (q Quota) Spec() ([]any, error) {
	return spec(q.Kind(), q.args, func() ([]any, error) { return q.options(), nil })
}

func spec(kind string, args, options func() ([]any, error)) ([]any, error) {
	a, err := args()
	if err != nil {
		return nil, err
	}
	out := append([]any{kind}, a...)
	if options != nil {
		o, err := options()
		if err != nil {
			return nil, err
		}
		out = append(out, o...)
	}
	return out, nil
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// PolicyWindow is ceil((MaxBurst+1) x Period / Count) seconds, the time an empty
// bucket takes to refill (at least 1).
func (t Throttle) PolicyWindow() int64 {
	if t.Count <= 0 {
		return 1
	}
	// In milliseconds, in 128 bits' worth of care: (burst x ms) may pass
	// 2^63 only for limits the module refuses anyway.
	ms := int64(t.Period / time.Millisecond)
	burst := t.MaxBurst + 1
	num := burst * ms
	if burst != 0 && num/burst != ms {
		return 1<<63 - 1
	}
	div := t.Count * 1000
	w := num / div
	if num%div != 0 {
		w++
	}
	return max(w, 1)
}

// PolicyWindow is the window in seconds, rounded up.
func (s Slide) PolicyWindow() int64 { return max(ceilSeconds(s.Window), 1) }

// PolicyWindow is the window in seconds, rounded up.
func (s Slice) PolicyWindow() int64 { return max(ceilSeconds(s.Window), 1) }

// PolicyWindow is 0: a lease has none.
func (Lease) PolicyWindow() int64 { return 0 }

// PolicyWindow is 0: a quota has none.
func (Quota) PolicyWindow() int64 { return 0 }
