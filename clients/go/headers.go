package ratelimit

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The header fields of docs/middleware.md, exactly as the other packages
// give them: RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-
// headers), the X-RateLimit-* trio, and Retry-After on a refusal that can
// fit. Times in whole seconds, rounded up.

// sfString is a Structured Field String (RFC 9651): quoted, \ and " escaped.
func sfString(s string) (string, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "", &ArgumentError{Argument: "name", Message: fmt.Sprintf("a policy name must be printable ASCII, not %q", s)}
		}
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`, nil
}

func policyItem(name string, limit Limit, r Result) (string, error) {
	n, err := sfString(name)
	if err != nil {
		return "", err
	}
	q := strconv.FormatInt(r.Limit, 10)
	switch limit.(type) {
	case Lease:
		return n + ";q=" + q + `;qu="concurrent-requests"`, nil
	case Quota:
		return n + ";q=" + q, nil
	}
	return n + ";q=" + q + ";w=" + strconv.FormatInt(limit.PolicyWindow(), 10), nil
}

// Headers are the header fields of one limit's result; name is its policy
// name ("default" when empty).
func Headers(r Result, name string, limit Limit) (http.Header, error) {
	if name == "" {
		name = "default"
	}
	item, err := policyItem(name, limit, r)
	if err != nil {
		return nil, err
	}
	return fields(r, name, item)
}

// AllowHeaders are the header fields of RL.ALLOW's (or RL.PEEK's) result
// for its rules, in the same order: every rule in RateLimit-Policy, the
// binding one in the others.
func AllowHeaders(r AllowResult, rules []Rule) (http.Header, error) {
	if len(r.Results) != len(rules) || r.Index < 0 || r.Index >= len(rules) {
		return nil, &ArgumentError{Argument: "rules", Message: fmt.Sprintf("%d results for %d rules", len(r.Results), len(rules))}
	}
	items := make([]string, len(rules))
	for i, rule := range rules {
		name := rule.Name
		if name == "" {
			name = "default"
		}
		var err error
		if items[i], err = policyItem(name, rule.Limit, r.Results[i]); err != nil {
			return nil, err
		}
	}
	name := rules[r.Index].Name
	if name == "" {
		name = "default"
	}
	return fields(r.Result, name, strings.Join(items, ", "))
}

func fields(r Result, name, policy string) (http.Header, error) {
	n, err := sfString(name)
	if err != nil {
		return nil, err
	}
	reset := ceilSeconds(r.ResetAfter)
	t := reset
	refusedFits := !r.Allowed && !r.NeverFits
	if refusedFits {
		t = ceilSeconds(r.RetryAfter)
	}
	h := http.Header{}
	h.Set("RateLimit-Policy", policy)
	h.Set("RateLimit", n+";r="+strconv.FormatInt(r.Remaining, 10)+";t="+strconv.FormatInt(t, 10))
	h.Set("X-RateLimit-Limit", strconv.FormatInt(r.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(r.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	if refusedFits {
		h.Set("Retry-After", strconv.FormatInt(ceilSeconds(r.RetryAfter), 10))
	}
	return h, nil
}
