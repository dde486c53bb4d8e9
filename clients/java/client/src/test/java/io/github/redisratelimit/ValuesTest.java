package io.github.redisratelimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The values, the header fields, the error parsing and the zone head: no server. */
class ValuesTest {
    @Test
    void limitsKnowTheirSpecsAndWindows() {
        // Table: limit, spec words, window (s) of RateLimit-Policy.
        assertEquals(List.of("THROTTLE", "4", "10", "60"), Limit.throttle(4, 10, 60).spec());
        assertEquals(30, Limit.throttle(4, 10, 60).windowSeconds()); // 5 x 60 / 10
        assertEquals(1, Limit.throttle(0, 3, 1000).inMillis().windowSeconds()); // 333 ms -> 1 s
        assertEquals(List.of("SLIDE", "5", "60", "PRECISION", "2"), Limit.slide(5, 60).withPrecision(2).spec());
        assertEquals(List.of("5", "60"), Limit.slide(5, 60).commandArgs());
        assertEquals(2, Limit.slide(5, 1500).inMillis().windowSeconds());
        assertEquals(List.of("SLICE", "10", "60", "6"), Limit.slice(10, 60, 6).spec());
        assertEquals(List.of("LEASE", "2", "30"), Limit.lease(2, 30).spec());
        assertEquals(30_000, Limit.lease(2, 30).ttlMillis());
        assertEquals(List.of("QUOTA", "100", "DAY", "TZ", "Asia/Kolkata"),
                Limit.quota(100, QuotaUnit.DAY).in("Asia/Kolkata").spec());
        assertEquals(-1, Limit.quota(100, QuotaUnit.DAY).windowSeconds());
        assertEquals(Limit.slide(5, 60), new Slide(5, 60, null, false), "values compare by their numbers");
    }

    @Test
    void blockUnitsAndShadowAreSpecWordsInTheContractsOrder() {
        Limit t = Limit.throttle(4, 10, 60).withBlock(300).withUnits(1500).asShadow();
        assertEquals(List.of("THROTTLE", "4", "10", "60", "BLOCK", "300", "UNITS", "1500", "SHADOW"), t.spec());
        // RL.REFUND and RL.CHARGE take the spec without them.
        assertEquals(List.of("THROTTLE", "4", "10", "60"), t.baseSpec());
        assertEquals(List.of("SHADOW"), Limit.lease(2, 30).asShadow().spec().subList(3, 4));
        assertEquals(List.of("SLIDE", "5", "60", "PRECISION", "2", "BLOCK", "9"),
                Limit.slide(5, 60).withPrecision(2).withBlock(9).spec());
        assertEquals(List.of("QUOTA", "100", "DAY", "TZ", "UTC", "UNITS", "0"),
                Limit.quota(100, QuotaUnit.DAY).in("UTC").withUnits(0).spec());
        assertEquals(List.of("SLICE", "10", "60", "6"), Limit.slice(10, 60, 6).withBlock(5).baseSpec());
        // A single command sends them as options (the module refuses UNITS and SHADOW there).
        assertEquals(List.of("TZ", "UTC", "BLOCK", "60"), Limit.quota(9, QuotaUnit.HOUR).in("UTC").withBlock(60)
                .commandOptions());
        assertEquals(List.of("BLOCK", "7"), Limit.throttle(0, 1, 1).withBlock(7).commandOptions());
        assertTrue(t.shadow());
        assertEquals(Limit.throttle(4, 10, 60).withBlock(300).withUnits(1500), t.enforced());
        assertEquals(Limit.throttle(1, 2, 3), new Throttle(1, 2, 3, false, null, null, false));
    }

    @Test
    void millisConvertEveryTimeOfALimit() {
        assertEquals(new Throttle(4, 10, 60_000, true, 5_000L, 3L, false),
                Millis.of(Limit.throttle(4, 10, 60).withBlock(5).withUnits(3)));
        assertEquals(new Slide(5, 60_000, 2_000L, true, null, null, true),
                Millis.of(Limit.slide(5, 60).withPrecision(2).asShadow()));
        assertEquals(Limit.throttle(0, 3, 1000).inMillis(), Millis.of(Limit.throttle(0, 3, 1000).inMillis()));
        // Too large for a long stays too large, for the module to refuse.
        assertEquals(Long.MAX_VALUE, ((Throttle) Millis.of(Limit.throttle(0, 1, Long.MAX_VALUE / 10))).period());
    }

    @Test
    void theRound5ErrorsNameTheirArgument() {
        assertEquals("BLOCK", new ArgumentException("LEASE takes no BLOCK", null).argument());
        ArgumentException shadowBlock = new ArgumentException("spec 1 (THROTTLE): SHADOW takes no BLOCK", null);
        assertEquals("BLOCK", shadowBlock.argument());
        assertEquals(1, shadowBlock.spec());
        ArgumentException wait = new ArgumentException("MAXWAIT takes THROTTLE limits only: spec 2 is SLIDE", null);
        assertEquals("MAXWAIT", wait.argument());
        assertEquals(2, wait.spec());
        assertEquals("MAXWAIT", new ArgumentException("MAXWAIT takes THROTTLE limits only", null).argument());
        assertEquals("SHADOW", new ArgumentException(
                "at least one spec must be enforced: every spec is SHADOW", null).argument());
        assertEquals("UNITS", new ArgumentException("spec 2 (SLIDE): UNITS must be an integer from 0 to "
                + "1000000000000", null).argument());
        assertEquals("COUNT", new ArgumentException("COUNT must be an integer from 1 to 128", null).argument());
        assertEquals("spec", new ArgumentException("RL.CHARGE does not take a LEASE spec", null).argument());
        assertEquals("quantity", new ArgumentException("quantity would put the TAT more than ten years ahead",
                null).argument());
    }

    @Test
    void headerFieldsAsTheOtherPackages() {
        Map<String, String> allowed = RateLimitHeaders.of(new Result(false, 10, 7, -1, 42), Limit.slide(10, 60));
        assertEquals(Map.of(
                "RateLimit-Policy", "\"default\";q=10;w=60",
                "RateLimit", "\"default\";r=7;t=42",
                "X-RateLimit-Limit", "10",
                "X-RateLimit-Remaining", "7",
                "X-RateLimit-Reset", "42"), allowed);
        assertEquals(List.of("RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining",
                "X-RateLimit-Reset"), List.copyOf(allowed.keySet()));

        Map<String, String> refused = RateLimitHeaders.of(new Result(true, 1, 0, 1500, 2001),
                new RateLimitHeaders.Named("per-ip", Limit.throttle(0, 1, 2000).inMillis()));
        assertEquals("\"per-ip\";r=0;t=2", refused.get("RateLimit"));
        assertEquals("2", refused.get("Retry-After"));
        assertEquals("3", refused.get("X-RateLimit-Reset"));

        AllowResult two = new AllowResult(true, 5, 0, 30, 60, 2,
                List.of(new Result(false, 100, 50, -1, 10), new Result(true, 5, 0, 30, 60)));
        Map<String, String> both = RateLimitHeaders.of(two, List.of(
                new RateLimitHeaders.Named("user", Limit.quota(100, QuotaUnit.DAY)),
                new RateLimitHeaders.Named("jobs", Limit.lease(5, 60))));
        assertEquals("\"user\";q=100, \"jobs\";q=5;qu=\"concurrent-requests\"", both.get("RateLimit-Policy"));
        assertEquals("\"jobs\";r=0;t=30", both.get("RateLimit"));
        assertEquals("30", both.get("Retry-After"));
        // Never fits: no Retry-After.
        assertNull(RateLimitHeaders.of(new Result(true, 5, 5, -1, 0), Limit.slide(5, 60)).get("Retry-After"));
        assertThrows(IllegalArgumentException.class,
                () -> RateLimitHeaders.of(new Result(false, 1, 1, -1, 0), new RateLimitHeaders.Named("é", Limit.slide(1, 1))));
        assertEquals("\"a\\\"b\"", RateLimitHeaders.sfString("a\"b"));
    }

    @Test
    void errorRepliesNameTheirArgument() {
        // Table: the reply's text, the argument, the spec.
        Object[][] cases = {
            {"count must be an integer from 1 to 4294967295", "count", 0},
            {"spec 2 (SLIDE): window must be an integer from 1 to 315360000 (seconds)", "window", 2},
            {"spec 2: unknown algorithm 'LEAKY' (expected THROTTLE, SLIDE, SLICE, LEASE or QUOTA)", "spec", 2},
            {"spec 2 is missing: 2 keys need 2 specs", "spec", 2},
            {"key 'a' is given more than once", "key", 0},
            {"spec 2 (QUOTA): unknown time zone 'Moon/Base'", "TZ", 2},
            {"a LEASE spec needs the ID option: ID lease_id", "ID", 0},
            {"unknown argument 'FOO'", "FOO", 0},
            {"QUANTITY is given more than once", "QUANTITY", 0},
            {"(max_burst + 1) x period / count must be at most 3153600000 seconds (100 years)", "period", 0},
            {"something else entirely", null, 0},
        };
        for (Object[] c : cases) {
            ArgumentException e = new ArgumentException((String) c[0], null);
            assertEquals(c[1], e.argument(), (String) c[0]);
            assertEquals(c[2], e.spec(), (String) c[0]);
        }
    }

    @Test
    void zoneSegmentsCoverFourHundredDaysEachWay() {
        long now = 1772323200L; // 2026-03-01T00:00:00Z
        String seg = Zones.segment("europe/berlin", now);
        String[] f = seg.split("\\|");
        assertEquals("europe/berlin", f[0]);
        assertEquals("Europe/Berlin", f[1]);
        long lo = now - 400L * 86400;
        assertEquals(Long.toString(lo), f[2]);
        assertEquals("3600", f[3]); // 2025-01-25: winter time
        // The changes: in pairs, increasing, within [lo, now + 400 d], offsets 3600 and 7200.
        assertTrue((f.length - 4) % 2 == 0 && f.length - 4 >= 10, seg);
        long last = lo;
        for (int i = 4; i < f.length; i += 2) {
            long t = Long.parseLong(f[i]);
            assertTrue(t > last && t <= now + 400L * 86400, seg);
            assertTrue(f[i + 1].equals("3600") || f[i + 1].equals("7200"), seg);
            last = t;
        }
        // 2026-03-29T01:00:00Z: summer time begins.
        assertTrue(seg.contains("|1774746000|7200|"), seg);
        assertNull(Zones.segment("Mars/Olympus", now));
        assertNull(Zones.segment("+08:00", now));
        assertEquals("UTC|UTC|" + lo + "|0", Zones.segment("UTC", now));
    }
}
