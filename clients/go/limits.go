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
	// Spec is the limit as a spec of RL.ALLOW and RL.PEEK: the kind's
	// word, its numbers and its options, BLOCK, UNITS and SHADOW last
	// (RL.REFUND and RL.CHARGE are sent the spec without those three).
	Spec() ([]any, error)
	// PolicyWindow is the w of the RateLimit-Policy field, in seconds; 0
	// for LEASE and QUOTA, which have none.
	PolicyWindow() int64
	// appendSpec appends the spec to a: without tail, as RL.REFUND and
	// RL.CHARGE take it; with tail, BLOCK, UNITS and SHADOW too.
	appendSpec(a []any, tail bool) ([]any, error)
	// tail is those options (BLOCK b, UNITS n, SHADOW) alone.
	tail() ([]any, error)
	// args are the kind's numbers, own its options (PRECISION, TZ).
	args() ([]any, error)
	own() ([]any, error)
	shadowed() bool
	withShadow(bool) Limit
	isLimit()
}

// Units is a limit's own quantity (UNITS n) in RL.ALLOW and RL.PEEK,
// instead of the call's: Throttle{..., Units: ratelimit.Units(1500)}.
func Units(n int64) *int64 { return &n }

// IsShadow says whether a limit is a SHADOW spec: decided, shown in the
// results, never refusing the call.
func IsShadow(l Limit) bool { return l.shadowed() }

// WithShadow is the limit with its Shadow field set to shadow.
func WithShadow(l Limit, shadow bool) Limit { return l.withShadow(shadow) }

// Throttle is GCRA (RL.THROTTLE): Count units per Period, in bursts of up
// to MaxBurst+1. The emission interval is Period/Count: a request costs
// that much of the bucket, which holds MaxBurst+1 of them.
type Throttle struct {
	MaxBurst int64
	Count    int64
	Period   time.Duration
	// Block, when not 0, blocks the key for that long after a refusal
	// (BLOCK b): every request on it is refused until then.
	Block time.Duration
	// Units, when not nil, is this limit's quantity in RL.ALLOW and
	// RL.PEEK (UNITS n) instead of the call's.
	Units *int64
	// Shadow makes it a SHADOW spec of RL.ALLOW and RL.PEEK: decided and
	// shown, never refusing the call.
	Shadow bool
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
	// Block, when not 0, blocks the key for that long after a refusal
	// (BLOCK b): every request on it is refused until then.
	Block time.Duration
	// Units, when not nil, is this limit's quantity in RL.ALLOW and
	// RL.PEEK (UNITS n) instead of the call's.
	Units *int64
	// Shadow makes it a SHADOW spec of RL.ALLOW and RL.PEEK: decided and
	// shown, never refusing the call.
	Shadow bool
}

// Slice is the sliding window of Slices time slices (RL.SLICE): never more
// than Limit units in any interval of length Window.
type Slice struct {
	Limit  int64
	Window time.Duration
	Slices int64
	// Block, when not 0, blocks the key for that long after a refusal
	// (BLOCK b): every request on it is refused until then.
	Block time.Duration
	// Units, when not nil, is this limit's quantity in RL.ALLOW and
	// RL.PEEK (UNITS n) instead of the call's.
	Units *int64
	// Shadow makes it a SHADOW spec of RL.ALLOW and RL.PEEK: decided and
	// shown, never refusing the call.
	Shadow bool
}

// Lease is a concurrency limit (RL.LEASE): at most Limit units held at
// once, each lease expiring TTL after it was taken or renewed.
type Lease struct {
	Limit int64
	TTL   time.Duration
	// Units and Shadow: as Throttle's (a lease takes no BLOCK).
	Units  *int64
	Shadow bool
}

// Quota is a calendar quota (RL.QUOTA): at most Limit units in each Unit
// (MINUTE, HOUR, DAY, WEEK, MONTH, YEAR) of the local clock of Zone (an
// IANA name, UTC, or an offset such as +08:00; "" is UTC).
type Quota struct {
	Limit int64
	Unit  QuotaUnit
	Zone  string
	// Block, when not 0, blocks the key for that long after a refusal
	// (BLOCK b): every request on it is refused until then.
	Block time.Duration
	// Units, when not nil, is this limit's quantity in RL.ALLOW and
	// RL.PEEK (UNITS n) instead of the call's.
	Units *int64
	// Shadow makes it a SHADOW spec of RL.ALLOW and RL.PEEK: decided and
	// shown, never refusing the call.
	Shadow bool
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

// Spec is THROTTLE max_burst count period [BLOCK b] [UNITS n] [SHADOW].
func (t Throttle) Spec() ([]any, error) { return t.appendSpec(nil, true) }

// Spec is SLIDE limit window [PRECISION d] [BLOCK b] [UNITS n] [SHADOW].
func (s Slide) Spec() ([]any, error) { return s.appendSpec(nil, true) }

// Spec is SLICE limit window slices [BLOCK b] [UNITS n] [SHADOW].
func (s Slice) Spec() ([]any, error) { return s.appendSpec(nil, true) }

// Spec is LEASE limit ttl [UNITS n] [SHADOW].
func (l Lease) Spec() ([]any, error) { return l.appendSpec(nil, true) }

// Spec is QUOTA limit unit [TZ zone] [BLOCK b] [UNITS n] [SHADOW].
func (q Quota) Spec() ([]any, error) { return q.appendSpec(nil, true) }

// tail is BLOCK b (milliseconds; 0 is none), UNITS n, SHADOW, as given.
func (t Throttle) tail() ([]any, error) { return appendOptions(nil, t.Block, t.Units, t.Shadow) }
func (s Slide) tail() ([]any, error)    { return appendOptions(nil, s.Block, s.Units, s.Shadow) }
func (s Slice) tail() ([]any, error)    { return appendOptions(nil, s.Block, s.Units, s.Shadow) }
func (l Lease) tail() ([]any, error)    { return appendOptions(nil, 0, l.Units, l.Shadow) }
func (q Quota) tail() ([]any, error)    { return appendOptions(nil, q.Block, q.Units, q.Shadow) }

func (Throttle) own() ([]any, error) { return nil, nil }
func (s Slide) own() ([]any, error)  { return s.options() }
func (Slice) own() ([]any, error)    { return nil, nil }
func (Lease) own() ([]any, error)    { return nil, nil }
func (q Quota) own() ([]any, error)  { return q.options(), nil }

func (t Throttle) shadowed() bool { return t.Shadow }
func (s Slide) shadowed() bool    { return s.Shadow }
func (s Slice) shadowed() bool    { return s.Shadow }
func (l Lease) shadowed() bool    { return l.Shadow }
func (q Quota) shadowed() bool    { return q.Shadow }

func (t Throttle) withShadow(v bool) Limit { t.Shadow = v; return t }
func (s Slide) withShadow(v bool) Limit    { s.Shadow = v; return s }
func (s Slice) withShadow(v bool) Limit    { s.Shadow = v; return s }
func (l Lease) withShadow(v bool) Limit    { l.Shadow = v; return l }
func (q Quota) withShadow(v bool) Limit    { q.Shadow = v; return q }

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

// appendOptions appends the options every kind but LEASE takes after
// its own: BLOCK b (milliseconds; 0 is none), UNITS n, SHADOW.
func appendOptions(a []any, block time.Duration, units *int64, shadow bool) ([]any, error) {
	if block != 0 {
		b, err := millis("block", block)
		if err != nil {
			return nil, err
		}
		a = append(a, "BLOCK", b)
	}
	if units != nil {
		a = append(a, "UNITS", itoa(*units))
	}
	if shadow {
		a = append(a, "SHADOW")
	}
	return a, nil
}

func (t Throttle) appendSpec(a []any, tail bool) ([]any, error) {
	p, err := millis("period", t.Period)
	if err != nil {
		return nil, err
	}
	a = append(a, "THROTTLE", itoa(t.MaxBurst), itoa(t.Count), p)
	if !tail {
		return a, nil
	}
	return appendOptions(a, t.Block, t.Units, t.Shadow)
}

func (s Slide) appendSpec(a []any, tail bool) ([]any, error) {
	w, err := millis("window", s.Window)
	if err != nil {
		return nil, err
	}
	a = append(a, "SLIDE", itoa(s.Limit), w)
	if s.Precision != 0 {
		d, err := millis("precision", s.Precision)
		if err != nil {
			return nil, err
		}
		a = append(a, "PRECISION", d)
	}
	if !tail {
		return a, nil
	}
	return appendOptions(a, s.Block, s.Units, s.Shadow)
}

func (s Slice) appendSpec(a []any, tail bool) ([]any, error) {
	w, err := millis("window", s.Window)
	if err != nil {
		return nil, err
	}
	a = append(a, "SLICE", itoa(s.Limit), w, itoa(s.Slices))
	if !tail {
		return a, nil
	}
	return appendOptions(a, s.Block, s.Units, s.Shadow)
}

func (l Lease) appendSpec(a []any, tail bool) ([]any, error) {
	ttl, err := millis("ttl", l.TTL)
	if err != nil {
		return nil, err
	}
	a = append(a, "LEASE", itoa(l.Limit), ttl)
	if !tail {
		return a, nil
	}
	return appendOptions(a, 0, l.Units, l.Shadow)
}

func (q Quota) appendSpec(a []any, tail bool) ([]any, error) {
	a = append(a, "QUOTA", itoa(q.Limit), string(q.Unit))
	if q.Zone != "" {
		a = append(a, "TZ", q.Zone)
	}
	if !tail {
		return a, nil
	}
	return appendOptions(a, q.Block, q.Units, q.Shadow)
}
