package corobench.coroutines

import corobench.kcommon.Json
import corobench.kcommon.ResourceRefused
import corobench.kcommon.Server
import io.ktor.http.ContentType
import io.ktor.http.HttpStatusCode
import io.ktor.network.selector.SelectorManager
import io.ktor.network.sockets.InetSocketAddress
import io.ktor.network.sockets.Socket
import io.ktor.network.sockets.aSocket
import io.ktor.network.sockets.openReadChannel
import io.ktor.network.sockets.openWriteChannel
import io.ktor.server.cio.CIO
import io.ktor.server.application.serverConfig
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import io.ktor.utils.io.readAvailable
import io.ktor.utils.io.writeFully
import java.io.IOException
import java.util.UUID
import java.util.concurrent.CompletableFuture
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicLong
import kotlinx.coroutines.CoroutineExceptionHandler
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull

/** listen(2) backlog: larger than any kernel limit, so the kernel's own maximum (somaxconn) applies. */
private const val BACKLOG = 65535

private fun refusedBind(p: Server, e: Throwable): ResourceRefused {
    val hostPort = (if (':' in p.host) "[${p.host}]" else p.host) + ":" + p.port
    return ResourceRefused("bind/listen $hostPort failed: ${e.message}")
}

/** Prints the ready line (flushed): the listener is bound and listening. */
private fun ready(p: Server, port: Int, threads: Int) {
    val json = Json().put("ready", true).put("scenario", p.scenario).put("host", p.host).put("port", port)
    if (p.isEcho) json.put("size", p.size).put("uuids", p.uuids).put("per_connection", p.perConnection)
    println(p.variantTo(json.put("threads", threads)))
    System.out.flush()
}

/**
 * On SIGTERM or SIGINT the JVM runs its shutdown hooks; ours runs [stop] (stop accepting, wait at
 * most 2 s for open connections, return the final line), prints the line and halts with status 0.
 * Halting is what makes the status 0: a JVM that finishes its shutdown after a signal exits with
 * 128 + the signal's number (143 for SIGTERM).
 */
private fun stopOnSignal(stop: () -> Json) {
    Runtime.getRuntime().addShutdownHook(
        Thread({
            val line = try {
                stop().toString()
            } catch (e: Throwable) {
                System.err.println("stop failed: $e")
                System.err.flush()
                Runtime.getRuntime().halt(1)
                return@Thread
            }
            println(line)
            System.out.flush()
            Runtime.getRuntime().halt(0)
        }, "corobench-stop"),
    )
}

/** The serving thread's last act: wait for the shutdown hook to halt the JVM. */
private fun parkForever(): Nothing {
    CountDownLatch(1).await()
    throw IllegalStateException("unreachable")
}

// ------------------------------------------------------------------ echo

/** Totals of the echo server: each connection adds its own counts once, when it ends. */
private class EchoTotals {
    var requests = 0L
    var uuidsGenerated = 0L
    var bytesIn = 0L
    var bytesOut = 0L
    var partial = 0L
}

/**
 * echo on Ktor's raw sockets (ktor-network): a coroutine per connection. ktor-network sets
 * TCP_NODELAY on every accepted socket and moves bytes between the socket and the connection's
 * channels with its own reader/writer coroutines on Dispatchers.IO, woken by one selector
 * coroutine; the accept loop and the connections' coroutines run there too, so that, as in Ktor's
 * CIO engine, one dispatcher (limited to [threads] + 1 by the caller) runs the whole server.
 */
fun echoServer(p: Server, threads: Int): Json {
    val selector = SelectorManager(Dispatchers.IO)
    val listener = try {
        runBlocking {
            aSocket(selector).tcp().bind(InetSocketAddress(p.host, p.port)) { backlogSize = BACKLOG }
        }
    } catch (e: IOException) {
        throw refusedBind(p, e)
    }
    val port = (listener.localAddress as InetSocketAddress).port
    val connections = SupervisorJob()
    val scope = CoroutineScope(Dispatchers.IO + connections)
    val totals = EchoTotals()
    val accepted = AtomicLong() // written by the accept loop only, read at stop
    val stopping = AtomicBoolean(false)
    val acceptDone = CountDownLatch(1)
    val refused = CompletableFuture<ResourceRefused>()

    stopOnSignal {
        val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2)
        stopping.set(true)
        listener.close()
        acceptDone.await(2, TimeUnit.SECONDS)
        val openAtStop = runBlocking {
            withTimeoutOrNull((deadline - System.nanoTime()) / 1_000_000) {
                connections.children.forEach { it.join() }
            }
            connections.children.count { it.isActive }
        }
        // close what is left: their coroutines are cancelled, close their sockets and add their counts
        connections.cancel()
        runBlocking { withTimeoutOrNull(500) { connections.children.forEach { it.join() } } }
        synchronized(totals) {
            p.variantTo(Json().put("scenario", "echo").put("size", p.size).put("uuids", p.uuids).put("per_connection", p.perConnection))
                .put("threads", threads).put("connections", accepted.get()).put("requests", totals.requests)
                .put("uuids_generated", totals.uuidsGenerated).put("bytes_in", totals.bytesIn)
                .put("bytes_out", totals.bytesOut).put("partial", totals.partial).put("open_at_stop", openAtStop.toLong())
        }
    }
    CoroutineScope(Dispatchers.IO).launch {
        try {
            while (true) {
                val socket = try {
                    listener.accept()
                } catch (e: Throwable) {
                    if (!stopping.get()) {
                        refused.complete(ResourceRefused("accepted ${accepted.get()} connections, then accept failed: ${e.message}"))
                    }
                    break
                }
                accepted.lazySet(accepted.get() + 1)
                scope.launch { connection(socket, p.size, p.uuids, p.perConnection, totals) }
            }
        } finally {
            acceptDone.countDown()
        }
    }
    ready(p, port, threads)
    throw refused.get() // exit 3 when accepting fails; otherwise the stop hook halts the JVM first
}

/** Serves one connection until the client closes it, or until it had its [perConnection] replies (0: no limit). */
private suspend fun connection(socket: Socket, size: Int, uuids: Int, perConnection: Int, totals: EchoTotals) {
    var n = 0L
    var generated = 0L
    var bytesIn = 0L
    var bytesOut = 0L
    var got = 0
    try {
        socket.use {
            val input = socket.openReadChannel()
            val output = socket.openWriteChannel(autoFlush = false)
            // One buffer per connection: the request is read into its head, the UUIDs appended.
            val reply = ByteArray(size + 37 * uuids)
            while (true) {
                got = 0
                while (got < size) {
                    val r = input.readAvailable(reply, got, size - got)
                    if (r < 0) break
                    got += r
                    bytesIn += r
                }
                if (got < size) break // EOF: between requests (got == 0) or inside one (partial)
                var pos = size
                repeat(uuids) {
                    reply[pos++] = '\n'.code.toByte()
                    val text = UUID.randomUUID().toString()
                    for (i in 0 until 36) reply[pos + i] = text[i].code.toByte()
                    pos += 36
                }
                generated += uuids
                output.writeFully(reply, 0, pos)
                output.flush() // one write of the whole reply
                bytesOut += pos
                n++
                got = 0
                if (n == perConnection.toLong()) break
            }
            output.flushAndClose()
        }
    } catch (e: IOException) {
        // reset by the peer: the connection ends here
    } finally {
        synchronized(totals) {
            totals.requests += n
            totals.uuidsGenerated += generated
            totals.bytesIn += bytesIn
            totals.bytesOut += bytesOut
            if (got > 0) totals.partial++
        }
    }
}

// ------------------------------------------------------------------ http

/**
 * Per-thread counters of the 200 responses: each worker thread increments its own cell (no shared
 * write per request); the cells are summed at stop. Ktor's engine hides its connections and moves
 * a request's coroutine between threads, so a thread is the finest owner there is.
 */
private class PerThreadTally {
    private val cells = ConcurrentLinkedQueue<AtomicLong>()
    private val local = ThreadLocal.withInitial { AtomicLong().also { cells.add(it) } }

    // lazySet: a plain (release) store by the cell's only writer; get() at stop reads it
    fun ok() = local.get().let { it.lazySet(it.get() + 1) }

    fun sum(): Long = cells.sumOf { it.get() }
}

private fun isToken(s: String): Boolean =
    s.length in 1..64 && s.all { it in 'a'..'z' || it in 'A'..'Z' || it in '0'..'9' || it == '_' || it == '-' }

/**
 * http on Ktor's CIO engine: GET /ping/{token} in the routing plugin answers the token as
 * text/plain (a token that is not 1..64 of [A-Za-z0-9_-] gets 404); every other path and method
 * gets the routing's own 404. CIO sets TCP_NODELAY on accepted sockets (ktor-network) and runs its
 * connections and handlers on Dispatchers.IO (limited to [threads] + 1 by the caller).
 */
fun httpServer(p: Server, threads: Int): Json {
    // Our hook stops the server and prints the final line; Ktor's own hook would race it.
    System.setProperty("io.ktor.server.engine.ShutdownHook", "false")
    val started = AtomicBoolean(false)
    val tally = PerThreadTally()
    val config = serverConfig {
        // A failure of the engine's root coroutines (a refused bind) comes back from start() as
        // its cause; without a handler it would also reach the thread's uncaught-exception handler.
        parentCoroutineContext = CoroutineExceptionHandler { _, e -> if (started.get()) System.err.println("http: $e") }
        module {
            routing {
                get("/ping/{token}") {
                    val token = call.parameters["token"]
                    if (token != null && isToken(token)) {
                        call.respondText(token, ContentType.Text.Plain)
                        tally.ok()
                    } else {
                        call.respond(HttpStatusCode.NotFound)
                    }
                }
            }
        }
    }
    val server = embeddedServer(CIO, config) {
        connector {
            host = p.host
            port = p.port
        }
    }
    try {
        server.start(wait = false)
    } catch (e: Throwable) {
        generateSequence(e) { it.cause }.firstOrNull { it is IOException }?.let { throw refusedBind(p, it) }
        throw e
    }
    started.set(true)
    val port = runBlocking { server.engine.resolvedConnectors().first().port }
    stopOnSignal {
        // at most 2 s for open connections to end, then they are cancelled (0.5 s more at most)
        server.stop(gracePeriodMillis = 2000, timeoutMillis = 2500)
        p.variantTo(Json().put("scenario", "http")).put("threads", threads).put("requests", tally.sum())
            .putNull("connections")
    }
    ready(p, port, threads)
    parkForever()
}
