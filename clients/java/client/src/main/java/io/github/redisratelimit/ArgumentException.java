package io.github.redisratelimit;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An {@code ERR ...} reply: a bad argument. {@link #argument()} names it as
 * the module does ({@code period}, {@code TZ}, {@code numkeys}, ...; for an
 * unknown word, the word), {@link #spec()} is the 1-based spec of RL.ALLOW,
 * RL.PEEK, RL.REFUND or RL.CHARGE it is in, when the module says so (else 0).
 */
public class ArgumentException extends RateLimitException {
    private static final long serialVersionUID = 1L;
    private final String reply;
    private final String argument;
    private final int spec;

    private record Rule(Pattern pattern, String name) {}

    // name null: the pattern's group 1 is the argument.
    private static final List<Rule> RULES = List.of(
            new Rule(Pattern.compile("^unknown argument '(.*)'$", Pattern.DOTALL), null),
            new Rule(Pattern.compile("^unknown time zone "), "TZ"),
            new Rule(Pattern.compile("^time zone offset "), "TZ"),
            new Rule(Pattern.compile("^unknown algorithm "), "spec"),
            new Rule(Pattern.compile("^key '.*' is given more than once$", Pattern.DOTALL), "key"),
            new Rule(Pattern.compile("^wrong number of arguments"), "arguments"),
            new Rule(Pattern.compile("^expects "), "spec"),
            new Rule(Pattern.compile("^\\(max_burst \\+ 1\\) x period / count "), "period"),
            new Rule(Pattern.compile("^a LEASE spec needs the ID option"), "ID"),
            new Rule(Pattern.compile("^ID is given but"), "ID"),
            new Rule(Pattern.compile("^RL\\.(REFUND|CHARGE) does not take a LEASE spec", Pattern.CASE_INSENSITIVE),
                    "spec"),
            new Rule(Pattern.compile("^quantity "), "quantity"),
            new Rule(Pattern.compile("^(LEASE|SHADOW) takes no BLOCK"), "BLOCK"),
            new Rule(Pattern.compile("^MAXWAIT takes THROTTLE limits only"), "MAXWAIT"),
            new Rule(Pattern.compile("^at least one spec must be enforced"), "SHADOW"),
            new Rule(Pattern.compile("^spec \\d+ is missing"), "spec"),
            new Rule(Pattern.compile("^([A-Za-z_][A-Za-z_0-9]*) (must|is given more than once)"), null));
    private static final Pattern IN_SPEC = Pattern.compile("^spec (\\d+)(?: \\([A-Z]+\\))?: ");
    private static final Pattern MISSING =
            Pattern.compile("^spec (\\d+) is missing|^MAXWAIT takes THROTTLE limits only: spec (\\d+) is ");

    /**
     * @param reply the reply's text, without {@code ERR }
     * @param cause the driver's exception
     */
    public ArgumentException(String reply, Throwable cause) {
        super(reply, cause);
        this.reply = reply;
        String rest = reply;
        int inSpec = 0;
        Matcher m = IN_SPEC.matcher(rest);
        if (m.find()) {
            inSpec = Integer.parseInt(m.group(1));
            rest = rest.substring(m.end());
        } else {
            Matcher missing = MISSING.matcher(rest);
            if (missing.find()) {
                inSpec = Integer.parseInt(missing.group(1) != null ? missing.group(1) : missing.group(2));
            }
        }
        String found = null;
        for (Rule rule : RULES) {
            Matcher r = rule.pattern().matcher(rest);
            if (r.find()) {
                found = rule.name() == null ? r.group(1) : rule.name();
                break;
            }
        }
        this.argument = found;
        this.spec = inSpec;
    }

    /** The reply's text, without {@code ERR }. */
    public String reply() {
        return reply;
    }

    /** The argument the reply names, or null when it names none. */
    public String argument() {
        return argument;
    }

    /** The 1-based spec the argument is in, or 0. */
    public int spec() {
        return spec;
    }
}
