package io.github.redisratelimit.spring;

import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * A request's $ip and $client (docs/middleware.md, "Keys and identity"): the
 * peer address unless the peer is a trusted proxy, whose X-Forwarded-For or
 * Forwarded field is then walked from the right; $client from the
 * application's resolver, else the client header of a trusted peer, else $ip.
 */
final class Identity {
    private record Range(BigInteger network, int bits, int length) {
        boolean contains(byte[] address) {
            if (address.length != length) {
                return false;
            }
            int total = length * 8;
            BigInteger a = new BigInteger(1, address);
            return a.shiftRight(total - bits).equals(network.shiftRight(total - bits));
        }
    }

    private final boolean trustAll;
    private final List<Range> trusted = new ArrayList<>();
    private final boolean forwarded;
    private final String clientHeader;

    Identity(List<String> trustedProxies, String proxyHeader, String clientHeader) {
        boolean all = false;
        for (String t : trustedProxies) {
            String s = t.trim();
            if (s.equals("*")) {
                all = true;
                continue;
            }
            int slash = s.indexOf('/');
            byte[] a = literal(slash < 0 ? s : s.substring(0, slash));
            if (a == null) {
                throw new IllegalArgumentException("trusted proxy '" + t + "' is not an IP address or CIDR range");
            }
            int bits = slash < 0 ? a.length * 8 : Integer.parseInt(s.substring(slash + 1));
            trusted.add(new Range(new BigInteger(1, a), bits, a.length));
        }
        this.trustAll = all;
        if (!proxyHeader.equalsIgnoreCase("X-Forwarded-For") && !proxyHeader.equalsIgnoreCase("Forwarded")) {
            throw new IllegalArgumentException("proxy header must be X-Forwarded-For or Forwarded, not " + proxyHeader);
        }
        this.forwarded = proxyHeader.equalsIgnoreCase("Forwarded");
        this.clientHeader = clientHeader == null || clientHeader.isBlank() ? null : clientHeader;
    }

    /** An IP literal's bytes (IPv4-mapped IPv6 as IPv4), or null when it is not one. No name lookup. */
    static byte[] literal(String s) {
        if (s.isEmpty() || !(s.indexOf(':') >= 0 || s.matches("[0-9.]+"))) {
            return null;
        }
        try {
            byte[] b = InetAddress.getByName(s).getAddress();
            return b;
        } catch (UnknownHostException | SecurityException e) {
            return null;
        }
    }

    /** The peer as written: an IPv4-mapped IPv6 address as a.b.c.d. */
    static String peer(String remote) {
        if (remote == null) {
            return "";
        }
        String r = remote.startsWith("[") && remote.endsWith("]") ? remote.substring(1, remote.length() - 1) : remote;
        String lower = r.toLowerCase(java.util.Locale.ROOT);
        if (lower.startsWith("::ffff:") && lower.substring(7).matches("[0-9.]+")) {
            return r.substring(7);
        }
        return r;
    }

    boolean isTrusted(String address) {
        if (trustAll) {
            return true;
        }
        byte[] a = literal(address);
        if (a == null) {
            return false;
        }
        for (Range r : trusted) {
            if (r.contains(a)) {
                return true;
            }
        }
        return false;
    }

    /** $ip of a request from {@code peer} with these header fields. */
    String ip(String peer, Function<String, List<String>> headers) {
        if (!isTrusted(peer)) {
            return peer;
        }
        List<String> entries = forwarded ? forwardedFor(headers.apply("Forwarded")) : xff(headers.apply("X-Forwarded-For"));
        if (entries.isEmpty()) {
            return peer;
        }
        for (int i = entries.size() - 1; i >= 0; i--) {
            if (!isTrusted(entries.get(i))) {
                return entries.get(i);
            }
        }
        return entries.get(0);
    }

    /** $client: the resolver's id, else a trusted peer's client header, else $ip. */
    String client(String resolved, String peer, String ip, Function<String, List<String>> headers) {
        if (resolved != null && !resolved.isEmpty()) {
            return resolved;
        }
        if (clientHeader != null && isTrusted(peer)) {
            List<String> v = headers.apply(clientHeader);
            if (v != null && !v.isEmpty() && !v.get(0).isEmpty()) {
                return v.get(0);
            }
        }
        return ip;
    }

    private static List<String> xff(List<String> lines) {
        List<String> out = new ArrayList<>();
        if (lines == null) {
            return out;
        }
        for (String e : String.join(",", lines).split(",")) {
            String t = e.trim();
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }

    private static List<String> forwardedFor(List<String> lines) {
        List<String> out = new ArrayList<>();
        if (lines == null) {
            return out;
        }
        for (String element : String.join(",", lines).split(",")) {
            for (String pair : element.split(";")) {
                String p = pair.trim();
                if (p.length() > 4 && p.substring(0, 4).equalsIgnoreCase("for=")) {
                    String v = p.substring(4).trim();
                    if (v.startsWith("\"") && v.endsWith("\"") && v.length() >= 2) {
                        v = v.substring(1, v.length() - 1);
                    }
                    if (v.startsWith("[")) {
                        int end = v.indexOf(']');
                        v = end > 0 ? v.substring(1, end) : v;
                    } else if (v.indexOf(':') == v.lastIndexOf(':') && v.indexOf(':') > 0) {
                        v = v.substring(0, v.indexOf(':'));
                    }
                    out.add(v);
                }
            }
        }
        return out;
    }
}
