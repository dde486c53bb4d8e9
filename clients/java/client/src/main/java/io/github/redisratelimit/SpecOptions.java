package io.github.redisratelimit;

import java.util.ArrayList;
import java.util.List;

/** The spec options every kind shares, as the module's words: {@code [BLOCK b] [UNITS n] [SHADOW]}. */
final class SpecOptions {
    private SpecOptions() {}

    /** {@code words}, then {@code [BLOCK b] [UNITS n] [SHADOW]} in that order. */
    static List<String> append(List<String> words, Long block, Long units, boolean shadow) {
        if (block == null && units == null && !shadow) {
            return words;
        }
        List<String> out = new ArrayList<>(words.size() + 5);
        out.addAll(words);
        if (block != null) {
            out.add("BLOCK");
            out.add(block.toString());
        }
        if (units != null) {
            out.add("UNITS");
            out.add(units.toString());
        }
        if (shadow) {
            out.add("SHADOW");
        }
        return List.copyOf(out);
    }
}
