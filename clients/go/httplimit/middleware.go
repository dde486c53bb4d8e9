// Package httplimit is the net/http middleware of docs/middleware.md: a
// func(http.Handler) http.Handler (so chi and gorilla/mux use it as is)
// that decides every request's rules in one RL.ALLOW, answers 429 itself
// when refused, adds the header fields when allowed, fails open or closed
// within a timeout counted from the request's arrival, logs one line per
// outage (log/slog), gives units back on a 5xx, releases a request's
// lease when the handler returns, and records OpenTelemetry metrics when
// given a MeterProvider (docs/metrics.md). SHADOW rules run beside the
// enforced ones and never refuse; a BLOCK rule's refusal keeps refusing
// for its block (a 429 with the block's Retry-After).
package httplimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
)

// Rule is one limit of a policy: its Name (the policy name of the header
// fields), its key (Key, a template naming $client, $ip, $path, $method;
// or KeyFunc, a function of the request) and its Limit. The limit's own
// Block blocks a client's key after a refusal (BLOCK); its Shadow makes
// the rule a SHADOW spec: decided, counted (shadow_limited), never
// refusing, and absent from the header fields.
type Rule struct {
	Name    string
	Key     string
	KeyFunc func(*http.Request) string
	Limit   ratelimit.Limit
}

// Route holds the rules of chosen routes: Path exact (/login) or a prefix
// ending in * (/api/* matches /api/ and below); Methods upper-case, none
// meaning every method.
type Route struct {
	Path    string
	Methods []string
	Rules   []Rule
}

// Options are the middleware's (docs/middleware.md#options).
type Options struct {
	// Rules are the policy: 1 to 16 rules with those of Routes.
	Rules []Rule
	// Routes add rules for chosen routes, decided in the same RL.ALLOW.
	Routes []Route
	// Skip lets a request through untouched when it answers true.
	Skip func(*http.Request) bool
	// TrustedProxies are the peers (addresses, CIDR ranges, or "*")
	// whose forwarding header and ClientHeader are believed.
	TrustedProxies []string
	// ProxyHeader is X-Forwarded-For (the default) or Forwarded.
	ProxyHeader string
	// ClientHeader names the client ($client) when sent by a trusted peer.
	ClientHeader string
	// ClientID gives $client (an authenticated user id) when not "".
	ClientID func(*http.Request) string
	// Quantity is what a request costs of every rule (default 1).
	Quantity int64
	// Timeout bounds the decision from the request's arrival (default 250 ms).
	Timeout time.Duration
	// FailOpen lets requests through, unlimited, when the limiter cannot
	// decide; false answers 503 (outage) or 500 (configuration error).
	FailOpen bool
	// Refund5xx gives the units back (RL.REFUND of each rate rule) when
	// the response's status is 500-599 (a handler's panic counts as 500).
	Refund5xx bool
	// Logger receives the outage and configuration lines (default slog.Default()).
	Logger *slog.Logger
	// MeterProvider, when set, receives the metrics of docs/metrics.md
	// (meter redis-ratelimit: ratelimit.decisions per rule and outcome,
	// ratelimit.decision.duration per request).
	MeterProvider metric.MeterProvider
}

type middleware struct {
	l         *ratelimit.Limiter
	o         Options
	trust     trust
	forwarded bool
	direct    bool // the client ends a call at its context's deadline

	metrics *metrics

	mu        sync.Mutex
	failing   bool
	failures  int
	since     time.Time
	misconfig map[string]bool
}

var templateName = regexp.MustCompile(`\$([a-z]+)`)

func checkRules(rules []Rule, names map[string]bool) error {
	for i, r := range rules {
		if r.Name == "" {
			return fmt.Errorf("httplimit: rule %d has no name", i+1)
		}
		if names[r.Name] {
			return fmt.Errorf("httplimit: the rule name %q is given more than once", r.Name)
		}
		names[r.Name] = true
		if r.Limit == nil {
			return fmt.Errorf("httplimit: rule %q has no limit", r.Name)
		}
		if r.KeyFunc == nil {
			if r.Key == "" {
				return fmt.Errorf("httplimit: rule %q has no key", r.Name)
			}
			for _, m := range templateName.FindAllStringSubmatch(r.Key, -1) {
				switch m[1] {
				case "client", "ip", "path", "method":
				default:
					return fmt.Errorf("httplimit: rule %q: unknown $%s in the key %q (expected $client, $ip, $path, $method)", r.Name, m[1], r.Key)
				}
			}
		}
	}
	return nil
}

// New makes the middleware over l. The options are checked here: rule
// names distinct, at most 16 rules with every route's, known $names.
func New(l *ratelimit.Limiter, o Options) (func(http.Handler) http.Handler, error) {
	names := map[string]bool{}
	if len(o.Rules) == 0 && len(o.Routes) == 0 {
		return nil, errors.New("httplimit: no rules")
	}
	if err := checkRules(o.Rules, names); err != nil {
		return nil, err
	}
	for _, route := range o.Routes {
		if err := checkRules(route.Rules, names); err != nil {
			return nil, err
		}
	}
	if len(names) > 16 {
		return nil, fmt.Errorf("httplimit: %d rules, at most 16 (with every route's)", len(names))
	}
	t, err := parseTrust(o.TrustedProxies)
	if err != nil {
		return nil, err
	}
	all := make([]string, 0, len(names))
	for n := range names {
		all = append(all, n)
	}
	mt, err := newMetrics(o.MeterProvider, all)
	if err != nil {
		return nil, fmt.Errorf("httplimit: the metrics: %w", err)
	}
	m := &middleware{l: l, o: o, trust: t, misconfig: map[string]bool{}, metrics: mt}
	switch strings.ToLower(o.ProxyHeader) {
	case "", "x-forwarded-for":
	case "forwarded":
		m.forwarded = true
	default:
		return nil, fmt.Errorf("httplimit: ProxyHeader %q (expected X-Forwarded-For or Forwarded)", o.ProxyHeader)
	}
	if m.o.Quantity == 0 {
		m.o.Quantity = 1
	}
	if m.o.Timeout <= 0 {
		m.o.Timeout = 250 * time.Millisecond
	}
	if m.o.Logger == nil {
		m.o.Logger = slog.Default()
	}
	if c, ok := l.Client().(*redis.Client); ok && c.Options().ContextTimeoutEnabled {
		m.direct = true
	}
	return m.handler, nil
}

func (m *middleware) rulesOf(r *http.Request) []Rule {
	rules := m.o.Rules
	for _, route := range m.o.Routes {
		if !matches(route, r) {
			continue
		}
		if len(rules) == len(m.o.Rules) {
			rules = append([]Rule(nil), rules...)
		}
		rules = append(rules, route.Rules...)
	}
	return rules
}

func matches(route Route, r *http.Request) bool {
	path := r.URL.Path
	if prefix, ok := strings.CutSuffix(route.Path, "*"); ok {
		if !strings.HasPrefix(path, prefix) {
			return false
		}
	} else if path != route.Path {
		return false
	}
	if len(route.Methods) == 0 {
		return true
	}
	for _, method := range route.Methods {
		if method == r.Method {
			return true
		}
	}
	return false
}

func (m *middleware) keyOf(rule Rule, r *http.Request, vars *[4]string) string {
	if rule.KeyFunc != nil {
		return rule.KeyFunc(r)
	}
	if vars[0] == "" {
		ip, trusted := m.clientIP(r)
		client := ""
		if m.o.ClientID != nil {
			client = m.o.ClientID(r)
		}
		if client == "" && trusted && m.o.ClientHeader != "" {
			client = r.Header.Get(m.o.ClientHeader)
		}
		if client == "" {
			client = ip
		}
		*vars = [4]string{client, ip, r.URL.EscapedPath(), r.Method}
	}
	return templateName.ReplaceAllStringFunc(rule.Key, func(s string) string {
		switch s {
		case "$client":
			return vars[0]
		case "$ip":
			return vars[1]
		case "$path":
			return vars[2]
		}
		return vars[3]
	})
}

func (m *middleware) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrival := time.Now()
		if m.o.Skip != nil && m.o.Skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		rules := m.rulesOf(r)
		var vars [4]string
		calls := make([]ratelimit.Rule, len(rules))
		names := make([]string, len(rules))
		shadow := make([]bool, len(rules))
		allShadow := true
		leaseID := ""
		for i, rule := range rules {
			calls[i] = ratelimit.Rule{Name: rule.Name, Key: m.keyOf(rule, r, &vars), Limit: rule.Limit}
			names[i] = rule.Name
			shadow[i] = ratelimit.IsShadow(rule.Limit)
			allShadow = allShadow && shadow[i]
			if _, ok := rule.Limit.(ratelimit.Lease); ok && leaseID == "" {
				leaseID = ratelimit.NewLeaseID()
			}
		}
		ctx, cancel := context.WithDeadline(r.Context(), arrival.Add(m.o.Timeout))
		d, err := m.decide(ctx, arrival, calls, shadow, allShadow, ratelimit.AllowOptions{Quantity: m.o.Quantity, LeaseID: leaseID})
		cancel()
		if err != nil {
			m.metrics.record(r.Context(), names, d.outcomes, resultError, d.took)
			if leaseID != "" {
				go m.release(calls, leaseID) // a late RL.ALLOW would hold the slot
			}
			m.failed(w, r, next, err)
			return
		}
		m.answered()
		var fields http.Header
		if !allShadow {
			if fields, err = enforcedHeaders(d.res, calls, shadow); err != nil {
				m.metrics.record(r.Context(), names, allErrors(len(names)), resultError, d.took)
				m.failed(w, r, next, err)
				return
			}
		}
		if !d.allowed {
			m.metrics.record(r.Context(), names, d.outcomes, resultLimited, d.took)
			for k, v := range fields {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusTooManyRequests)
			if d.res.NeverFits {
				fmt.Fprint(w, "rate limited: this request exceeds the capacity\n")
			} else {
				fmt.Fprintf(w, "rate limited: retry in %s s\n", fields.Get("Retry-After"))
			}
			return
		}
		m.metrics.record(r.Context(), names, d.outcomes, resultAllowed, d.took)
		rw := &responseWriter{ResponseWriter: w, fields: fields, status: http.StatusOK}
		defer func() {
			v := recover()
			if v != nil {
				rw.status = http.StatusInternalServerError
			} else if !rw.written {
				rw.addFields() // the server writes the header when the handler returns
			}
			if leaseID != "" {
				go m.release(calls, leaseID)
			}
			if m.o.Refund5xx && rw.status >= 500 && rw.status <= 599 {
				go m.refund(d.recorded)
			}
			if v != nil {
				panic(v)
			}
		}()
		next.ServeHTTP(rw, r)
	})
}

// allErrors is n outcomes "error".
func allErrors(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = resultError
	}
	return out
}

// decision is a request's: allowed or not, the binding result (when some
// rule is enforced), each rule's outcome for the metrics, the rules that
// recorded the request (what a 5xx gives back) and the time from the
// request's arrival to the decision.
type decision struct {
	allowed  bool
	res      ratelimit.AllowResult
	outcomes []string
	recorded []ratelimit.Rule
	took     time.Duration
}

// decide is the request's RL.ALLOW, its SHADOW rules as SHADOW specs.
// When every rule is SHADOW (which RL.ALLOW refuses), each rule is its
// own RL.ALLOW without SHADOW, all in one pipeline, their refusals
// ignored: each key records what a shadow limit records (what enforcing
// it alone would have), and the request goes on.
func (m *middleware) decide(ctx context.Context, arrival time.Time, calls []ratelimit.Rule, shadow []bool, allShadow bool, o ratelimit.AllowOptions) (decision, error) {
	d := decision{outcomes: make([]string, len(calls))}
	a, err := m.bounded(ctx, func(ctx context.Context) (answer, error) {
		var a answer
		var err error
		if allShadow {
			enforced := make([]ratelimit.Rule, len(calls))
			for i, c := range calls {
				enforced[i] = ratelimit.Rule{Name: c.Name, Key: c.Key, Limit: ratelimit.WithShadow(c.Limit, false)}
			}
			a.each, err = m.l.AllowEach(ctx, enforced, o)
		} else {
			a.res, err = m.l.Allow(ctx, calls, o)
		}
		return a, err
	})
	d.res = a.res
	each := a.each
	d.took = time.Since(arrival) // the middleware's time: from the arrival
	if err != nil {
		d.outcomes = allErrors(len(calls))
		return d, err
	}
	d.allowed = allShadow || d.res.Allowed
	for i, c := range calls {
		var own ratelimit.Result
		if allShadow {
			own = each[i].Result
		} else {
			own = d.res.Results[i]
		}
		switch {
		case own.Allowed:
			d.outcomes[i] = resultAllowed
			if d.allowed {
				d.recorded = append(d.recorded, c)
			}
		case shadow[i]:
			d.outcomes[i] = resultShadowLimited
		default:
			d.outcomes[i] = resultLimited
		}
	}
	return d, nil
}

// enforcedHeaders are the header fields of the enforced rules only: a
// SHADOW rule is not the client's to see.
func enforcedHeaders(res ratelimit.AllowResult, calls []ratelimit.Rule, shadow []bool) (http.Header, error) {
	if len(res.Results) != len(calls) {
		return ratelimit.AllowHeaders(res, calls)
	}
	sub := ratelimit.AllowResult{Result: res.Result, Index: -1}
	var rules []ratelimit.Rule
	for i, c := range calls {
		if shadow[i] {
			continue
		}
		if i == res.Index {
			sub.Index = len(rules)
		}
		rules = append(rules, c)
		sub.Results = append(sub.Results, res.Results[i])
	}
	return ratelimit.AllowHeaders(sub, rules)
}

// answer is what the decision's calls answered.
type answer struct {
	res  ratelimit.AllowResult
	each []ratelimit.AllowResult
}

// bounded runs f, ended at ctx's deadline even where the client would
// wait for its own read timeout (ContextTimeoutEnabled unset): a late f
// answers into its channel, which nobody reads.
func (m *middleware) bounded(ctx context.Context, f func(context.Context) (answer, error)) (answer, error) {
	if m.direct {
		return f(ctx)
	}
	type result struct {
		a   answer
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := f(ctx)
		done <- result{a, err}
	}()
	select {
	case r := <-done:
		return r.a, r.err
	case <-ctx.Done():
		return answer{}, ctx.Err()
	}
}

func (m *middleware) release(rules []ratelimit.Rule, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.o.Timeout)
	defer cancel()
	for _, r := range rules {
		if _, ok := r.Limit.(ratelimit.Lease); ok {
			_, _ = m.l.Release(ctx, r.Key, id)
		}
	}
}

// refund gives back the units of the rules that recorded the request.
func (m *middleware) refund(rules []ratelimit.Rule) {
	ctx, cancel := context.WithTimeout(context.Background(), m.o.Timeout)
	defer cancel()
	for _, r := range rules {
		if _, ok := r.Limit.(ratelimit.Lease); !ok {
			_, _ = m.l.Refund(ctx, r.Key, r.Limit, m.o.Quantity)
		}
	}
}

// configError: an error no retry cures (docs/middleware.md#responses).
func configError(err error) bool {
	var ce *ratelimit.CommandError
	var ae *ratelimit.ArgumentError
	if errors.As(err, &ce) || errors.As(err, &ae) || errors.Is(err, ratelimit.ErrWrongType) || errors.Is(err, ratelimit.ErrBackendUnavailable) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		for _, p := range []string{"ERR", "NOPERM", "CROSSSLOT", "NOAUTH", "WRONGPASS"} {
			if strings.HasPrefix(re.Error(), p) {
				return true
			}
		}
	}
	return false
}

func (m *middleware) failed(w http.ResponseWriter, r *http.Request, next http.Handler, err error) {
	config := configError(err)
	m.mu.Lock()
	if config {
		msg := err.Error()
		if !m.misconfig[msg] && len(m.misconfig) < 100 {
			m.misconfig[msg] = true
			then := "answering 500 meanwhile"
			if m.o.FailOpen {
				then = "letting requests through unlimited (fail open) meanwhile"
			}
			m.o.Logger.Error(fmt.Sprintf("rate limiter configuration error (%s): not an outage, the policy or its keys must be fixed; %s", msg, then))
		}
	} else {
		m.failures++
		if !m.failing {
			m.failing, m.since = true, time.Now()
			then := "answering 503 until it answers again"
			if m.o.FailOpen {
				then = "letting requests through unlimited (fail open) until it answers again"
			}
			m.o.Logger.Warn(fmt.Sprintf("rate limiter unavailable (%s); %s", err, then))
		}
	}
	m.mu.Unlock()
	if m.o.FailOpen {
		next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if config {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "rate limiter misconfigured\n")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprint(w, "rate limiter unavailable\n")
}

func (m *middleware) answered() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.failing {
		return
	}
	m.o.Logger.Warn(fmt.Sprintf("rate limiter available again, after %d failed calls in %.1f s", m.failures, time.Since(m.since).Seconds()))
	m.failing, m.failures = false, 0
}

// responseWriter adds the decision's fields the handler has not set when
// the response's header is written, and keeps its status.
type responseWriter struct {
	http.ResponseWriter
	fields  http.Header
	status  int
	written bool
}

func (w *responseWriter) WriteHeader(code int) {
	if !w.written {
		w.written = true
		w.status = code
		w.addFields()
	}
	w.ResponseWriter.WriteHeader(code)
}

// addFields adds each field the handler has not set (names compared
// without case: the map's keys are canonical).
func (w *responseWriter) addFields() {
	h := w.ResponseWriter.Header()
	for k, v := range w.fields {
		if h.Get(k) == "" {
			h[k] = v
		}
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (Flush,
// Hijack, deadlines).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
