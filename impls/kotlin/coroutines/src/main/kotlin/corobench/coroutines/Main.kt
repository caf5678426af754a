package corobench.coroutines

import corobench.kcommon.Blocking
import corobench.kcommon.Chain
import corobench.kcommon.EType
import corobench.kcommon.Info
import corobench.kcommon.Json
import corobench.kcommon.ResourceRefused
import corobench.kcommon.Server
import corobench.kcommon.Spec
import corobench.kcommon.Tasks
import corobench.kcommon.cliMain
import java.io.FileInputStream
import java.io.FileOutputStream
import java.io.IOException
import java.lang.management.ManagementFactory
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext

/** Dispatchers.Default's worker count; read once, when Dispatchers.Default is first used. */
private const val CORE_POOL_SIZE = "kotlinx.coroutines.scheduler.core.pool.size"

/** Dispatchers.IO's parallelism limit (kotlinx.coroutines' default: max(64, processors)). */
private const val IO_PARALLELISM = "kotlinx.coroutines.io.parallelism"

/** kotlinx.coroutines' CoroutineScheduler supports at most 2^21 - 2 threads. */
private const val MAX_POOL_SIZE = (1L shl 21) - 2

fun main(args: Array<String>) {
    val spec = Spec("kotlin-coroutines", true, MAX_POOL_SIZE, mapOf("blocking" to listOf("io", "default")))
    cliMain(spec, args) { p ->
        // --threads N, else the processors the JVM may use (its affinity mask): the library's own
        // default would be at least 2. Must happen before anything touches Dispatchers.Default
        // (nothing has yet).
        val threads = if (p.threads > 0) p.threads else Runtime.getRuntime().availableProcessors()
        System.setProperty(CORE_POOL_SIZE, threads.toString())
        // Ktor runs its sockets, engine and handlers on Dispatchers.IO (hard-coded in ktor-network
        // and the CIO engine), whose default limit is max(64, processors) threads: the servers
        // limit it to N + 1, N for the coroutines and one for Ktor's selector loop, which keeps
        // its slot while it blocks in select (see README).
        if (p is Server && System.getProperty(IO_PARALLELISM) == null) {
            System.setProperty(IO_PARALLELISM, (threads + 1).toString())
        }
        when (p) {
            is Chain -> chain(p, threads)
            is Tasks -> tasks(p, threads)
            is Blocking -> blocking(p, threads)
            is Server -> if (p.isEcho) echoServer(p, threads) else httpServer(p, threads)
            is Info -> info(threads)
        }
    }
}

/** The manifest's `info` line: JVM, GC, heap limits, CPUs and the dispatchers' sizes. */
private fun info(threads: Int): Json {
    val hs = ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean::class.java)
    fun flag(name: String) = try { hs.getVMOption(name).value } catch (e: IllegalArgumentException) { "" }
    val gc = listOf("Serial", "Parallel", "G1", "Z", "Shenandoah", "Epsilon").firstOrNull { flag("Use${it}GC") == "true" }
    val mib = 1024L * 1024
    return Json().put("jvm", System.getProperty("java.vm.version")).put("vendor", System.getProperty("java.vm.vendor"))
        .put("gc", gc ?: "unknown")
        .put("max_heap_mib", flag("MaxHeapSize").toLong() / mib)
        .put("initial_heap_mib", flag("InitialHeapSize").toLong() / mib)
        .put("thread_stack_kib", flag("ThreadStackSize").toLong())
        .put("cpus", Runtime.getRuntime().availableProcessors())
        .put("default_dispatcher_threads", threads)
        .put("io_dispatcher_parallelism", ioParallelism())
        .put("servers_io_dispatcher_parallelism", threads + 1)
}

/** Dispatchers.IO's limit as kotlinx.coroutines computes it. */
private fun ioParallelism(): Int =
    System.getProperty(IO_PARALLELISM)?.toInt() ?: maxOf(64, Runtime.getRuntime().availableProcessors())

// ------------------------------------------------------------------ chain

private fun chain(p: Chain, threads: Int): Json = runBlocking(Dispatchers.Default) {
    repeat(p.warmup) { chainPass(p) }
    val (received, checksum, elapsed) = chainPass(p)
    Json().put("scenario", "chain").put("workers", p.workers).put("events", p.events).put("queue", p.queue)
        .put("etype", p.etype.label).put("esize", p.esize).put("threads", threads).put("warmup", p.warmup)
        .put("received", received).put("checksum", checksum).put("elapsed_ns", elapsed)
}

private class PassResult(val received: Long, val checksum: Long, val elapsed: Long) {
    operator fun component1() = received
    operator fun component2() = checksum
    operator fun component3() = elapsed
}

/** One full pass with fresh channels and coroutines. */
private suspend fun chainPass(p: Chain): PassResult = coroutineScope {
    val w = p.workers
    val e = p.events
    val s = p.esize
    val etype = p.etype
    // The payloads exist before the clock starts: one shared String (str), one shared holder of
    // it (str_ptr), and the Latin-1 bytes every str_clone event is decoded from.
    val str = if (etype.isString) "x".repeat(s.toInt()) else ""
    val holder = StrHolder(str)
    val bytes = str.toByteArray(Charsets.ISO_8859_1)
    val sums = LongArray(w)
    val counts = LongArray(w)
    val receivers = arrayOfNulls<Job>(w)

    val t0 = System.nanoTime()
    for (i in 0 until w) {
        val ch = Channel<Event>(p.queue)
        receivers[i] = launch {
            var sum = 0L
            var n = 0L
            while (n < e) {
                sum += weight(ch.receive())
                n++
            }
            sums[i] = sum
            counts[i] = n
        }
        launch {
            var k = 0L
            when (etype) {
                EType.INT -> while (k++ < e) ch.send(IntEvent(s))
                EType.STR -> while (k++ < e) ch.send(StrEvent(str))
                EType.STR_PTR -> while (k++ < e) ch.send(StrPtrEvent(holder))
                EType.STR_CLONE -> while (k++ < e) ch.send(StrCloneEvent(String(bytes, Charsets.ISO_8859_1)))
            }
        }
    }
    for (r in receivers) r!!.join()
    val elapsed = System.nanoTime() - t0

    val received = counts.sum()
    val checksum = sums.sum()
    check(received == w * e && checksum == p.expectedChecksum) {
        "chain pass got received=$received checksum=$checksum"
    }
    PassResult(received, checksum, elapsed)
}

// ------------------------------------------------------------------ tasks

private fun tasks(p: Tasks, threads: Int): Json = runBlocking(Dispatchers.Default) {
    val n = p.tasks
    val d = p.sleepMs
    // Each task stores 1 in its own slot and ends; the scope waits for all of them and main sums.
    // Nothing shared is written per task (the rule of every runtime, see ../java/README.md).
    val done = ByteArray(n)
    var spawned = 0L
    val t0 = System.nanoTime()
    coroutineScope {
        for (i in 0 until n) {
            launch {
                delay(d)
                done[i] = 1
            }
        }
        spawned = System.nanoTime() - t0
    }
    val elapsed = System.nanoTime() - t0
    Json().put("scenario", "tasks").put("tasks", n).put("sleep_ms", d).put("threads", threads)
        .put("checksum", done.sum().toLong()).put("spawn_ns", spawned).put("elapsed_ns", elapsed)
}

// ------------------------------------------------------------------ blocking

private fun blocking(p: Blocking, threads: Int): Json = runBlocking(Dispatchers.Default) {
    val n = p.tasks
    val b = p.bytes
    val io = p.variant == "io"
    // Task i adds its bytes to slot i (one writer per slot; the scopes order the iterations).
    val written = LongArray(n)

    suspend fun iteration() = coroutineScope {
        for (i in 0 until n) {
            launch {
                // "io": hand the blocking calls to Dispatchers.IO; "default": block a Default worker.
                written[i] += if (io) withContext(Dispatchers.IO) { copy(b) } else copy(b)
            }
        }
    }

    iteration() // warm-up, not measured
    written.fill(0)
    val t0 = System.nanoTime()
    var it = 0L
    while (it++ < p.iterations) iteration()
    val elapsed = System.nanoTime() - t0

    // io: at most Dispatchers.IO's parallelism make the calls at once; default: the workers themselves
    Json().put("scenario", "blocking").put("tasks", n).put("iterations", p.iterations).put("bytes", b)
        .put("variant", p.variant).put("threads", threads).put("pool_threads", if (io) ioParallelism() else 0)
        .put("checksum", written.sum()).put("elapsed_ns", elapsed)
}

/** Reads b bytes from /dev/urandom, writes them to /dev/null; returns the bytes written. */
private fun copy(b: Int): Long {
    val buf = ByteArray(b)
    try {
        FileInputStream("/dev/urandom").use { input ->
            var off = 0
            while (off < b) {
                val r = input.read(buf, off, b - off)
                if (r < 0) throw IOException("/dev/urandom: unexpected end of file")
                off += r
            }
        }
        FileOutputStream("/dev/null").use { it.write(buf, 0, b) }
    } catch (e: IOException) {
        if (e.message?.contains("Too many open files") == true) throw ResourceRefused("file descriptors refused: ${e.message}")
        throw e
    }
    return b.toLong()
}
