package corobench.common;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The protocol's command line: {@code <scenario> [flags]}, flags in short ({@code -w 3}) or long
 * ({@code --workers 3}, {@code --workers=3}) form, in any order, each at most once. Every problem
 * is a {@link BadInput} (exit 2, one line on stderr, nothing on stdout).
 */
public final class Cli {
    private Cli() {}

    /**
     * What a runtime accepts beyond the common flags; {@code variants} maps a scenario to its
     * variant names, the first being the default (a scenario without an entry has none).
     */
    public record Spec(String id, boolean threadsFlag, int maxThreads, Map<String, List<String>> variants) {
        List<String> variantsOf(String scenario) {
            return variants.getOrDefault(scenario, List.of());
        }
    }

    public sealed interface Params permits Chain, Tasks, Blocking, Server, Info {}

    /** threads is 0 when --threads was not given. */
    public record Chain(int workers, long events, int queue, EType etype, long esize, int threads, int warmup)
            implements Params {
        /** WxExS, the expected checksum (validated to fit in a long). */
        public long expectedChecksum() {
            return workers * events * esize;
        }
    }

    public record Tasks(int tasks, long sleepMs, int threads) implements Params {}

    public record Blocking(int tasks, long iterations, int bytes, String variant, int threads) implements Params {}

    /**
     * echo or http. {@code host} is the literal as given (echoed in the output lines), {@code address}
     * the parsed one; size, uuids and perConnection (echo: replies after which the server closes a
     * connection, 0 = until the client does) are 0 for http; {@code variant} is the one to run,
     * {@code variantGiven} whether --variant was on the command line (only then is it echoed).
     */
    public record Server(String scenario, String host, InetAddress address, int port, int size, int uuids,
                         int perConnection, int threads, String variant, boolean variantGiven) implements Params {
        public boolean isEcho() {
            return scenario.equals("echo");
        }

        /** Adds "variant" to an output line when --variant was given. */
        public Json variantTo(Json json) {
            return variantGiven ? json.put("variant", variant) : json;
        }
    }

    /** Not a protocol scenario: the manifest's {@code info} command (one line of runtime settings). */
    public record Info() implements Params {}

    /** The body of a runtime's main: runs the scenario and returns the output line. */
    @FunctionalInterface
    public interface Body {
        Json run(Params p) throws Exception;
    }

    /** A flag; {@code bool} flags take no value. */
    private record Flag(String shortName, String longName, boolean bool) {
        Flag(String shortName, String longName) {
            this(shortName, longName, false);
        }

        String display() {
            return "--" + longName;
        }
    }

    private static final List<Flag> CHAIN = List.of(
            new Flag("w", "workers"), new Flag("e", "events"), new Flag("q", "queue"),
            new Flag("t", "etype"), new Flag("s", "esize"), new Flag(null, "threads"),
            new Flag(null, "warmup"), new Flag(null, "cpuprofile"));
    private static final List<Flag> TASKS = List.of(
            new Flag("n", "tasks"), new Flag("d", "sleep-ms"), new Flag(null, "threads"));
    private static final List<Flag> BLOCKING = List.of(
            new Flag("n", "tasks"), new Flag("i", "iterations"), new Flag("b", "bytes"),
            new Flag(null, "variant"), new Flag(null, "threads"));
    private static final List<Flag> ECHO = List.of(
            new Flag(null, "host"), new Flag(null, "port"), new Flag(null, "size"), new Flag(null, "uuids"),
            new Flag(null, "per-connection"), new Flag(null, "threads"), new Flag(null, "variant"),
            new Flag(null, "allow-remote", true));
    private static final List<Flag> HTTP = List.of(
            new Flag(null, "host"), new Flag(null, "port"), new Flag(null, "threads"), new Flag(null, "variant"),
            new Flag(null, "allow-remote", true));
    private static final String SCENARIOS = "chain, tasks, blocking, echo or http";

    /**
     * Parses, runs and reports: exit 0 with the JSON line, 2 on bad input, 3 when a resource was
     * refused, 1 on any other failure.
     */
    public static void main(Spec spec, String[] argv, Body body) {
        Params p;
        try {
            p = parse(spec, argv);
        } catch (BadInput e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> die(spec, e));
        try {
            String line = body.run(p).toString();
            System.out.println(line);
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            die(spec, e);
        }
    }

    /** Ends the program for a failure: exit 3 for a refused resource, 2 for bad input, else 1. */
    public static void die(Spec spec, Throwable e) {
        if (e instanceof ResourceRefused r) {
            System.err.println(r.getMessage());
            Runtime.getRuntime().halt(3);
        } else if (e instanceof OutOfMemoryError) {
            System.err.println("memory refused: " + e.getMessage());
            Runtime.getRuntime().halt(3);
        } else if (e instanceof BadInput b) {
            System.err.println(b.getMessage());
            Runtime.getRuntime().halt(2);
        }
        System.err.println(spec.id() + ": " + e);
        Runtime.getRuntime().halt(1);
    }

    public static Params parse(Spec spec, String[] argv) throws BadInput {
        if (argv.length == 0) {
            throw new BadInput("missing scenario (expected " + SCENARIOS + ")");
        }
        String scenario = argv[0];
        List<Flag> flags = switch (scenario) {
            case "chain" -> CHAIN;
            case "tasks" -> TASKS;
            case "blocking" -> BLOCKING;
            case "echo" -> ECHO;
            case "http" -> HTTP;
            case "info" -> List.of();
            default -> throw new BadInput("unknown scenario '" + scenario + "' (expected " + SCENARIOS + ")");
        };
        Map<String, String> values = new HashMap<>();
        for (int i = 1; i < argv.length; i++) {
            String arg = argv[i];
            Flag flag = null;
            String value = null;
            if (arg.startsWith("--") && arg.length() > 2) {
                String name = arg.substring(2);
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                for (Flag f : flags) {
                    if (f.longName().equals(name)) {
                        flag = f;
                    }
                }
            } else if (arg.length() == 2 && arg.charAt(0) == '-') {
                for (Flag f : flags) {
                    if (arg.substring(1).equals(f.shortName())) {
                        flag = f;
                    }
                }
            }
            if (flag == null) {
                throw new BadInput("unknown flag '" + arg + "' for scenario " + scenario);
            }
            if (flag.bool()) {
                if (value != null) {
                    throw new BadInput("flag " + flag.display() + " takes no value");
                }
                value = "";
            } else if (value == null) {
                if (i + 1 >= argv.length) {
                    throw new BadInput("flag " + arg + " needs a value");
                }
                value = argv[++i];
            }
            if (values.putIfAbsent(flag.longName(), value) != null) {
                throw new BadInput("flag " + flag.display() + " given more than once");
            }
        }

        if (values.containsKey("cpuprofile")) {
            throw new BadInput("--cpuprofile is not supported by " + spec.id());
        }
        int threads = 0;
        if (values.containsKey("threads")) {
            if (!spec.threadsFlag()) {
                throw new BadInput("--threads is not supported by " + spec.id()
                        + " (its thread count is not a runtime setting)");
            }
            threads = (int) count(values, "threads", 0, spec.maxThreads());
        }

        return switch (scenario) {
            case "chain" -> {
                long w = count(values, "workers", 1000, Long.MAX_VALUE);
                long e = count(values, "events", 10000, Long.MAX_VALUE);
                long s = count(values, "esize", 10, Long.MAX_VALUE);
                checkProduct("WxExS", w, e, s);
                int q = (int) count(values, "queue", 256, Integer.MAX_VALUE);
                EType t = values.containsKey("etype") ? EType.parse(values.get("etype")) : EType.INT;
                int warmup = (int) number(values, "warmup", 0, 0, Integer.MAX_VALUE);
                // One array slot per worker; a JVM string holds at most Integer.MAX_VALUE - 8 Latin-1 bytes.
                count(values, "workers", 1000, Integer.MAX_VALUE);
                if (t.isString()) {
                    count(values, "esize", 10, Integer.MAX_VALUE - 8);
                }
                yield new Chain((int) w, e, q, t, s, threads, warmup);
            }
            case "tasks" -> {
                int n = (int) count(values, "tasks", 10000, Integer.MAX_VALUE);
                long d = number(values, "sleep-ms", 10000, 0, Long.MAX_VALUE / 1_000_000);
                yield new Tasks(n, d, threads);
            }
            case "echo", "http" -> server(spec, scenario, values, threads);
            case "info" -> new Info();
            default -> {
                long n = count(values, "tasks", 1000, Long.MAX_VALUE);
                long it = count(values, "iterations", 1000, Long.MAX_VALUE);
                long b = count(values, "bytes", 10, Long.MAX_VALUE);
                checkProduct("TxIxB", n, it, b);
                count(values, "tasks", 1000, Integer.MAX_VALUE);
                count(values, "bytes", 10, Integer.MAX_VALUE - 8);
                yield new Blocking((int) n, it, (int) b, variant(spec, scenario, values), threads);
            }
        };
    }

    /** The variant to run: --variant when given (it must be one the spec lists), else the first. */
    private static String variant(Spec spec, String scenario, Map<String, String> values) throws BadInput {
        List<String> known = spec.variantsOf(scenario);
        String variant = values.get("variant");
        if (variant == null) {
            return known.isEmpty() ? null : known.getFirst();
        }
        if (!known.contains(variant)) {
            throw new BadInput("unknown variant '" + variant + "' for " + spec.id() + " " + scenario
                    + (known.isEmpty() ? " (it has no variants)" : " (expected one of " + String.join(", ", known) + ")"));
        }
        return variant;
    }

    private static Server server(Spec spec, String scenario, Map<String, String> values, int threads)
            throws BadInput {
        String host = values.getOrDefault("host", "127.0.0.1");
        InetAddress address = ipLiteral(host);
        if (!values.containsKey("allow-remote") && !address.isLoopbackAddress()) {
            throw new BadInput("--host " + host + " is not a loopback address (127.0.0.0/8 or ::1); "
                    + "add --allow-remote to bind it");
        }
        int port = (int) number(values, "port", 0, 0, 65535);
        boolean echo = scenario.equals("echo");
        int size = echo ? (int) count(values, "size", 17, 1 << 20) : 0;
        int uuids = echo ? (int) number(values, "uuids", 5, 0, 1000) : 0;
        int perConnection = echo ? (int) number(values, "per-connection", 0, 0, 1_000_000_000) : 0;
        String variant = variant(spec, scenario, values);
        return new Server(scenario, host, address, port, size, uuids, perConnection, threads, variant,
                values.containsKey("variant"));
    }

    /**
     * An IP address literal, never a name (no resolver lookup): IPv4 in dotted-quad form (four
     * decimal numbers 0..255 without leading zeros: not the legacy forms "127.1" or "0x7f.1"
     * that {@link InetAddress#ofLiteral} also accepts), or an IPv6 literal without a zone.
     */
    static InetAddress ipLiteral(String host) throws BadInput {
        boolean v6 = host.indexOf(':') >= 0;
        boolean ok = v6 ? host.matches("[0-9A-Fa-f:.]+")
                : host.matches("((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])");
        if (ok) {
            try {
                return InetAddress.ofLiteral(host);
            } catch (IllegalArgumentException e) {
                // falls through to the message below
            }
        }
        throw new BadInput("--host " + host + " is not an IP address literal (IPv4 a.b.c.d or IPv6; no names)");
    }

    /** A positive count. */
    private static long count(Map<String, String> values, String name, long dflt, long max) throws BadInput {
        return number(values, name, dflt, 1, max);
    }

    private static long number(Map<String, String> values, String name, long dflt, long min, long max)
            throws BadInput {
        String raw = values.get(name);
        if (raw == null) {
            return dflt;
        }
        long v;
        try {
            v = Long.parseLong(raw);
        } catch (NumberFormatException e) {
            if (raw.matches("[+-]?[0-9]+")) {
                throw new BadInput("--" + name + " " + raw + " is out of range (at most " + max + ")");
            }
            throw new BadInput("--" + name + " needs an integer, got '" + raw + "'");
        }
        if (v < min) {
            throw new BadInput("--" + name + " must be " + (min == 0 ? "zero or positive" : "positive")
                    + ", got " + raw);
        }
        if (v > max) {
            throw new BadInput("--" + name + " " + raw + " is out of range (at most " + max + ")");
        }
        return v;
    }

    private static void checkProduct(String what, long a, long b, long c) throws BadInput {
        try {
            Math.multiplyExact(Math.multiplyExact(a, b), c);
        } catch (ArithmeticException e) {
            throw new BadInput("expected checksum " + what + " = " + a + "x" + b + "x" + c
                    + " exceeds 2^63-1");
        }
    }
}
