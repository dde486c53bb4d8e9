package httplimit

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// trust is the parsed TrustedProxies: every peer, or these prefixes.
type trust struct {
	all      bool
	prefixes []netip.Prefix
}

func parseTrust(list []string) (trust, error) {
	var t trust
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "*" {
			t.all = true
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			t.prefixes = append(t.prefixes, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return trust{}, fmt.Errorf("httplimit: TrustedProxies: %q is not an IP address or CIDR range", s)
		}
		a = a.Unmap()
		t.prefixes = append(t.prefixes, netip.PrefixFrom(a, a.BitLen()))
	}
	return t, nil
}

func (t trust) trusts(addr string) bool {
	if t.all {
		return true
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer is the TCP peer's address: RemoteAddr's host, an IPv4-mapped IPv6
// address written as IPv4.
func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().String()
	}
	return host
}

// forwardedFor are the for= values of every Forwarded field line, in
// order, unquoted and without their ports.
func forwardedFor(h http.Header) []string {
	var out []string
	for _, line := range h.Values("Forwarded") {
		for _, element := range strings.Split(line, ",") {
			for _, pair := range strings.Split(element, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "for") {
					continue
				}
				v = strings.Trim(strings.TrimSpace(v), `"`)
				if strings.HasPrefix(v, "[") {
					if end := strings.Index(v, "]"); end > 0 {
						v = v[1:end]
					}
				} else if host, _, err := net.SplitHostPort(v); err == nil {
					v = host
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// clientIP is $ip: the peer, or from a trusted peer the forwarding
// header's entry found walking from the right past trusted addresses.
func (m *middleware) clientIP(r *http.Request) (ip string, trustedPeer bool) {
	p := peer(r)
	if !m.trust.trusts(p) {
		return p, false
	}
	var entries []string
	if m.forwarded {
		entries = forwardedFor(r.Header)
	} else {
		for _, line := range r.Header.Values("X-Forwarded-For") {
			for _, e := range strings.Split(line, ",") {
				if e = strings.TrimSpace(e); e != "" {
					entries = append(entries, e)
				}
			}
		}
	}
	if len(entries) == 0 {
		return p, true
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if !m.trust.trusts(entries[i]) {
			return entries[i], true
		}
	}
	return entries[0], true
}
