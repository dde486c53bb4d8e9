package httplimit

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The middleware's metrics (docs/metrics.md, the same in every language):
// through OpenTelemetry's metric API, with the MeterProvider the
// application passes (Options.MeterProvider); none, none recorded. The
// package needs only the API: the SDK and the exporter are the
// application's.

// Outcomes of a rule (ratelimit.result of ratelimit.decisions) and of a
// request (of ratelimit.decision.duration).
const (
	resultAllowed       = "allowed"
	resultLimited       = "limited"
	resultShadowLimited = "shadow_limited"
	resultError         = "error"
)

// meterName is the instrumentation scope.
const meterName = "redis-ratelimit"

// durationBuckets suit a decision in seconds: a round trip of 0.1 ms to
// the timeout.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

type metrics struct {
	decisions metric.Int64Counter
	duration  metric.Float64Histogram
	// the attribute sets, made once: per rule name and outcome, per outcome
	rules  map[string]map[string]metric.MeasurementOption
	oneOf  map[string]metric.MeasurementOption
	enable bool
}

func newMetrics(mp metric.MeterProvider, names []string) (*metrics, error) {
	m := &metrics{}
	if mp == nil {
		return m, nil
	}
	meter := mp.Meter(meterName)
	var err error
	if m.decisions, err = meter.Int64Counter("ratelimit.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Rate limit decisions: one per matched rule per request, by the rule's own outcome")); err != nil {
		return nil, err
	}
	if m.duration, err = meter.Float64Histogram("ratelimit.decision.duration", metric.WithUnit("s"),
		metric.WithDescription("How long a request's rate limit decision took (every call to Redis it made)"),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	outcomes := []string{resultAllowed, resultLimited, resultShadowLimited, resultError}
	m.rules = make(map[string]map[string]metric.MeasurementOption, len(names))
	for _, n := range names {
		m.rules[n] = make(map[string]metric.MeasurementOption, len(outcomes))
		for _, o := range outcomes {
			m.rules[n][o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.rule", n), attribute.String("ratelimit.result", o)))
		}
	}
	m.oneOf = make(map[string]metric.MeasurementOption, len(outcomes))
	for _, o := range outcomes {
		m.oneOf[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.result", o)))
	}
	m.enable = true
	return m, nil
}

// record counts each rule's outcome (outcomes[i] of rules[i]) and the
// request's decision time with its outcome.
func (m *metrics) record(ctx context.Context, names []string, outcomes []string, request string, took time.Duration) {
	if !m.enable {
		return
	}
	for i, n := range names {
		m.decisions.Add(ctx, 1, m.rules[n][outcomes[i]])
	}
	m.duration.Record(ctx, took.Seconds(), m.oneOf[request])
}
