package corobench.kcommon

import java.net.InetAddress
import java.net.UnknownHostException
import kotlin.system.exitProcess

/**
 * The protocol's command line, validation and output line for the Kotlin runtimes:
 * `<scenario> [flags]`, flags in short (`-w 3`) or long (`--workers 3`, `--workers=3`) form, in any
 * order, each at most once. Every problem is a [BadInput] (exit 2, one line on stderr, nothing on
 * stdout); a refused resource is a [ResourceRefused] (exit 3).
 */
class BadInput(message: String) : Exception(message, null, false, false)

class ResourceRefused(message: String) : RuntimeException(message, null, false, false)

enum class EType(val label: String) {
    INT("int"), STR("str"), STR_PTR("str_ptr"), STR_CLONE("str_clone");

    val isString: Boolean get() = this != INT

    companion object {
        fun parse(s: String): EType = entries.firstOrNull { it.label == s || it.ordinal.toString() == s }
            ?: throw BadInput("unknown event type '$s' (expected 0/int, 1/str, 2/str_ptr, 3/str_clone)")
    }
}

/**
 * What a runtime accepts beyond the common flags; [variants] maps a scenario to its variant names,
 * the first being the default (a scenario without an entry has none).
 */
class Spec(val id: String, val threadsFlag: Boolean, val maxThreads: Long, val variants: Map<String, List<String>>)

/** threads is 0 when --threads was not given. */
sealed interface Params {
    val threads: Int
}

data class Chain(
    val workers: Int, val events: Long, val queue: Int, val etype: EType, val esize: Long,
    override val threads: Int, val warmup: Int,
) : Params {
    /** W×E×S, validated to fit in a Long. */
    val expectedChecksum: Long get() = workers * events * esize
}

data class Tasks(val tasks: Int, val sleepMs: Long, override val threads: Int) : Params

data class Blocking(
    val tasks: Int, val iterations: Long, val bytes: Int, val variant: String, override val threads: Int,
) : Params

/**
 * echo or http. [host] is the literal as given (echoed in the output lines), [address] the parsed
 * one; size, uuids and perConnection (echo: replies after which the server closes a connection, 0 =
 * until the client does) are 0 for http; [variant] is null when --variant was not given.
 */
data class Server(
    val scenario: String, val host: String, val address: InetAddress, val port: Int, val size: Int, val uuids: Int,
    val perConnection: Int, override val threads: Int, val variant: String?,
) : Params {
    val isEcho: Boolean get() = scenario == "echo"

    /** Adds "variant" to an output line when --variant was given. */
    fun variantTo(json: Json): Json = if (variant != null) json.put("variant", variant) else json
}

/** Not a protocol scenario: the manifest's `info` command (one line of runtime settings). */
object Info : Params {
    override val threads: Int get() = 0
}

/** Builds the single JSON output line. */
class Json {
    private val sb = StringBuilder(256).append('{')

    fun put(key: String, value: Long): Json = apply { key(key); sb.append(value) }
    fun put(key: String, value: Int): Json = put(key, value.toLong())
    fun put(key: String, value: String): Json = apply { key(key); string(value) }
    fun put(key: String, value: Boolean): Json = apply { key(key); sb.append(value) }

    /** A JSON null (e.g. a count the library does not expose). */
    fun putNull(key: String): Json = apply { key(key); sb.append("null") }

    private fun key(key: String) {
        if (sb.length > 1) sb.append(',')
        string(key)
        sb.append(':')
    }

    private fun string(s: String) {
        sb.append('"')
        for (c in s) {
            when {
                c == '"' || c == '\\' -> sb.append('\\').append(c)
                c < ' ' -> sb.append(String.format("\\u%04x", c.code))
                else -> sb.append(c)
            }
        }
        sb.append('"')
    }

    override fun toString(): String = "$sb}"
}

/** A flag; [bool] flags take no value. */
private class Flag(val short: String?, val long: String, val bool: Boolean = false)

private val CHAIN = listOf(
    Flag("w", "workers"), Flag("e", "events"), Flag("q", "queue"), Flag("t", "etype"), Flag("s", "esize"),
    Flag(null, "threads"), Flag(null, "warmup"), Flag(null, "cpuprofile"),
)
private val TASKS = listOf(Flag("n", "tasks"), Flag("d", "sleep-ms"), Flag(null, "threads"))
private val BLOCKING = listOf(
    Flag("n", "tasks"), Flag("i", "iterations"), Flag("b", "bytes"), Flag(null, "variant"), Flag(null, "threads"),
)
private val ECHO = listOf(
    Flag(null, "host"), Flag(null, "port"), Flag(null, "size"), Flag(null, "uuids"), Flag(null, "per-connection"),
    Flag(null, "threads"), Flag(null, "variant"), Flag(null, "allow-remote", bool = true),
)
private val HTTP = listOf(
    Flag(null, "host"), Flag(null, "port"), Flag(null, "threads"), Flag(null, "variant"),
    Flag(null, "allow-remote", bool = true),
)
private const val SCENARIOS = "chain, tasks, blocking, echo or http"

/**
 * Parses argv, runs [body] and prints its line: exit 0 with the JSON line, 2 on bad input, 3 when
 * a resource was refused, 1 on any other failure.
 */
fun cliMain(spec: Spec, argv: Array<String>, body: (Params) -> Json) {
    val p = try {
        parse(spec, argv)
    } catch (e: BadInput) {
        System.err.println(e.message)
        exitProcess(2)
    }
    Thread.setDefaultUncaughtExceptionHandler { _, e -> die(spec, e) }
    try {
        val line = body(p).toString()
        println(line)
        System.out.flush()
        exitProcess(0)
    } catch (e: Throwable) {
        die(spec, e)
    }
}

fun die(spec: Spec, e: Throwable): Nothing {
    when (e) {
        is ResourceRefused -> { System.err.println(e.message); Runtime.getRuntime().halt(3) }
        is OutOfMemoryError -> { System.err.println("memory refused: ${e.message}"); Runtime.getRuntime().halt(3) }
        is BadInput -> { System.err.println(e.message); Runtime.getRuntime().halt(2) }
        else -> { System.err.println("${spec.id}: $e"); Runtime.getRuntime().halt(1) }
    }
    throw IllegalStateException("unreachable")
}

fun parse(spec: Spec, argv: Array<String>): Params {
    if (argv.isEmpty()) throw BadInput("missing scenario (expected $SCENARIOS)")
    val scenario = argv[0]
    val flags = when (scenario) {
        "chain" -> CHAIN
        "tasks" -> TASKS
        "blocking" -> BLOCKING
        "echo" -> ECHO
        "http" -> HTTP
        "info" -> emptyList()
        else -> throw BadInput("unknown scenario '$scenario' (expected $SCENARIOS)")
    }
    val values = HashMap<String, String>()
    var i = 1
    while (i < argv.size) {
        val arg = argv[i]
        var value: String? = null
        val flag = if (arg.startsWith("--") && arg.length > 2) {
            var name = arg.substring(2)
            val eq = name.indexOf('=')
            if (eq >= 0) {
                value = name.substring(eq + 1)
                name = name.substring(0, eq)
            }
            flags.firstOrNull { it.long == name }
        } else if (arg.length == 2 && arg[0] == '-') {
            flags.firstOrNull { it.short == arg.substring(1) }
        } else {
            null
        }
        if (flag == null) throw BadInput("unknown flag '$arg' for scenario $scenario")
        if (flag.bool) {
            if (value != null) throw BadInput("flag --${flag.long} takes no value")
            value = ""
        } else if (value == null) {
            if (i + 1 >= argv.size) throw BadInput("flag $arg needs a value")
            value = argv[++i]
        }
        if (values.putIfAbsent(flag.long, value) != null) throw BadInput("flag --${flag.long} given more than once")
        i++
    }

    if ("cpuprofile" in values) throw BadInput("--cpuprofile is not supported by ${spec.id}")
    var threads = 0
    if ("threads" in values) {
        if (!spec.threadsFlag) throw BadInput("--threads is not supported by ${spec.id}")
        threads = values.count("threads", 0, spec.maxThreads).toInt()
    }

    return when (scenario) {
        "chain" -> {
            val w = values.count("workers", 1000, Long.MAX_VALUE)
            val e = values.count("events", 10000, Long.MAX_VALUE)
            val s = values.count("esize", 10, Long.MAX_VALUE)
            checkProduct("WxExS", w, e, s)
            val q = values.count("queue", 256, Int.MAX_VALUE.toLong()).toInt()
            val t = values["etype"]?.let { EType.parse(it) } ?: EType.INT
            val warmup = values.number("warmup", 0, 0, Int.MAX_VALUE.toLong()).toInt()
            // One array slot per worker; a JVM string holds at most Int.MAX_VALUE - 8 Latin-1 bytes.
            values.count("workers", 1000, Int.MAX_VALUE.toLong())
            if (t.isString) values.count("esize", 10, Int.MAX_VALUE - 8L)
            Chain(w.toInt(), e, q, t, s, threads, warmup)
        }
        "tasks" -> Tasks(
            values.count("tasks", 10000, Int.MAX_VALUE.toLong()).toInt(),
            values.number("sleep-ms", 10000, 0, Long.MAX_VALUE / 1_000_000),
            threads,
        )
        "echo", "http" -> server(spec, scenario, values, threads)
        "info" -> Info
        else -> {
            val n = values.count("tasks", 1000, Long.MAX_VALUE)
            val it = values.count("iterations", 1000, Long.MAX_VALUE)
            val b = values.count("bytes", 10, Long.MAX_VALUE)
            checkProduct("TxIxB", n, it, b)
            values.count("tasks", 1000, Int.MAX_VALUE.toLong())
            values.count("bytes", 10, Int.MAX_VALUE - 8L)
            Blocking(n.toInt(), it, b.toInt(), variant(spec, scenario, values) ?: "", threads)
        }
    }
}

/** The variant to run: --variant when given (it must be one the spec lists), else the first (or null). */
private fun variant(spec: Spec, scenario: String, values: Map<String, String>): String? {
    val known = spec.variants[scenario].orEmpty()
    val variant = values["variant"] ?: return known.firstOrNull()
    if (variant !in known) {
        throw BadInput(
            "unknown variant '$variant' for ${spec.id} $scenario" +
                if (known.isEmpty()) " (it has no variants)" else " (expected one of ${known.joinToString(", ")})",
        )
    }
    return variant
}

private fun server(spec: Spec, scenario: String, values: Map<String, String>, threads: Int): Server {
    val host = values["host"] ?: "127.0.0.1"
    val address = ipLiteral(host)
    if ("allow-remote" !in values && !address.isLoopbackAddress) {
        throw BadInput("--host $host is not a loopback address (127.0.0.0/8 or ::1); add --allow-remote to bind it")
    }
    val port = values.number("port", 0, 0, 65535).toInt()
    val echo = scenario == "echo"
    val size = if (echo) values.count("size", 17, 1L shl 20).toInt() else 0
    val uuids = if (echo) values.number("uuids", 5, 0, 1000).toInt() else 0
    val perConnection = if (echo) values.number("per-connection", 0, 0, 1_000_000_000).toInt() else 0
    variant(spec, scenario, values)
    return Server(scenario, host, address, port, size, uuids, perConnection, threads, values["variant"])
}

private val IPV4 = Regex("((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])")
private val IPV6_CHARS = Regex("[0-9A-Fa-f:][0-9A-Fa-f:.]*")

/**
 * An IP address literal, never a name: IPv4 in dotted-quad form (four decimal numbers 0..255
 * without leading zeros, not the legacy forms "127.1" or "0x7f.1"), or an IPv6 literal without a
 * zone. Only strings that InetAddress parses as literals reach it (an IPv6 candidate has a ':' and
 * starts with a hex digit or ':'), so it never asks a resolver.
 */
fun ipLiteral(host: String): InetAddress {
    val ok = if (':' in host) IPV6_CHARS.matches(host) else IPV4.matches(host)
    if (ok) {
        try {
            return InetAddress.getByName(host)
        } catch (e: UnknownHostException) {
            // falls through to the message below
        }
    }
    throw BadInput("--host $host is not an IP address literal (IPv4 a.b.c.d or IPv6; no names)")
}

/** A positive count. */
private fun Map<String, String>.count(name: String, dflt: Long, max: Long): Long = number(name, dflt, 1, max)

private fun Map<String, String>.number(name: String, dflt: Long, min: Long, max: Long): Long {
    val raw = this[name] ?: return dflt
    val v = raw.toLongOrNull()
        ?: if (raw.matches(Regex("[+-]?[0-9]+"))) {
            throw BadInput("--$name $raw is out of range (at most $max)")
        } else {
            throw BadInput("--$name needs an integer, got '$raw'")
        }
    if (v < min) throw BadInput("--$name must be ${if (min == 0L) "zero or positive" else "positive"}, got $raw")
    if (v > max) throw BadInput("--$name $raw is out of range (at most $max)")
    return v
}

private fun checkProduct(what: String, a: Long, b: Long, c: Long) {
    try {
        Math.multiplyExact(Math.multiplyExact(a, b), c)
    } catch (e: ArithmeticException) {
        throw BadInput("expected checksum $what = ${a}x${b}x$c exceeds 2^63-1")
    }
}
