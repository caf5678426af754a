package corobench.common;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The echo server on blocking {@code java.net} sockets: the calling thread accepts, and each
 * connection runs on a thread from {@code builder} (a platform or a virtual thread per connection),
 * or on the accepting thread itself when {@code builder} is null (the {@code serial} variant).
 *
 * <p>Counts live in the connection's own locals and are added to the totals once, when the
 * connection ends (one lock per connection, none per request).
 */
public final class EchoServer {
    /** listen(2) backlog: larger than any kernel limit, so the kernel's own maximum (somaxconn) applies. */
    public static final int BACKLOG = 65535;

    private final Cli.Server p;
    private final int threads;
    private final Thread.Builder builder;
    private final ServerSocket listener;
    /** Connections accepted and not yet ended: waited for (and closed if need be) at stop. */
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final CountDownLatch acceptDone = new CountDownLatch(1);
    private volatile boolean stopping;
    /** Written by the accepting thread only. */
    private volatile long accepted;

    // Totals, guarded by `open` (updated once per connection).
    private long requests;
    private long uuidsGenerated;
    private long bytesIn;
    private long bytesOut;
    private long partial;

    private EchoServer(Cli.Server p, int threads, Thread.Builder builder, ServerSocket listener) {
        this.p = p;
        this.threads = threads;
        this.builder = builder;
        this.listener = listener;
    }

    /**
     * Binds and listens; a refused bind is {@link ResourceRefused} (exit 3).
     *
     * @param threads the count reported in the output lines
     * @param builder starts a thread per connection; null serves them one at a time (serial)
     */
    public static EchoServer bind(Cli.Server p, int threads, Thread.Builder builder) {
        return new EchoServer(p, threads, builder, Servers.listen(p));
    }

    public int port() {
        return listener.getLocalPort();
    }

    /** Accepts until {@link #stop} closes the listener. */
    public void serve() {
        try {
            while (true) {
                Socket s;
                try {
                    s = listener.accept();
                } catch (IOException e) {
                    if (stopping) {
                        return;
                    }
                    throw new ResourceRefused("accepted " + accepted + " connections, then accept failed: "
                            + e.getMessage());
                }
                accepted++;
                open.add(s);
                if (builder == null) {
                    connection(s);
                } else {
                    try {
                        builder.start(() -> connection(s));
                    } catch (OutOfMemoryError e) {
                        throw new ResourceRefused("accepted " + accepted + " connections, then thread start failed: "
                                + e.getMessage());
                    }
                }
            }
        } finally {
            acceptDone.countDown();
        }
    }

    /** Serves one connection until the client closes it, or until it had its --per-connection replies. */
    @SuppressWarnings("deprecation") // String.getBytes(int, int, byte[], int): copies the ASCII UUID text in place
    private void connection(Socket s) {
        final int size = p.size();
        final int uuids = p.uuids();
        final long perConnection = p.perConnection();
        long n = 0;
        long generated = 0;
        long in = 0;
        long out = 0;
        int got = 0;
        try (s) {
            s.setTcpNoDelay(true);
            InputStream input = s.getInputStream();
            OutputStream output = s.getOutputStream();
            // One buffer per connection: the request is read into its head, the UUIDs appended.
            byte[] reply = new byte[size + 37 * uuids];
            while (true) {
                got = 0;
                while (got < size) {
                    int r = input.read(reply, got, size - got);
                    if (r < 0) {
                        break;
                    }
                    got += r;
                    in += r;
                }
                if (got < size) {
                    break; // EOF: between requests (got == 0) or inside one (partial)
                }
                int pos = size;
                for (int k = 0; k < uuids; k++) {
                    reply[pos++] = '\n';
                    UUID.randomUUID().toString().getBytes(0, 36, reply, pos);
                    pos += 36;
                }
                generated += uuids;
                output.write(reply, 0, pos); // one write; the socket stream loops on short writes
                out += pos;
                n++;
                got = 0;
                if (n == perConnection) {
                    break;
                }
            }
        } catch (IOException e) {
            // reset by the peer or closed at stop: the connection ends here
        } finally {
            synchronized (open) {
                requests += n;
                uuidsGenerated += generated;
                bytesIn += in;
                bytesOut += out;
                if (got > 0) {
                    partial++;
                }
                open.remove(s);
                open.notifyAll();
            }
        }
    }

    /**
     * Stops accepting, waits up to 2 s for the open connections to end, closes the rest, and
     * returns the final line.
     */
    public Json stop() throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
        stopping = true;
        try {
            listener.close();
        } catch (IOException e) {
            // closing anyway
        }
        // serial: the accepting thread may be inside a connection; it returns once that one ends
        acceptDone.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        int openAtStop = awaitEmpty(deadline);
        for (Socket s : open) {
            try {
                s.close();
            } catch (IOException e) {
                // already gone
            }
        }
        // the closed connections' threads add their counts as they end
        awaitEmpty(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500));
        acceptDone.await(500, TimeUnit.MILLISECONDS);
        synchronized (open) {
            return p.variantTo(new Json().put("scenario", "echo").put("size", p.size()).put("uuids", p.uuids())
                            .put("per_connection", p.perConnection()))
                    .put("threads", threads).put("connections", accepted).put("requests", requests)
                    .put("uuids_generated", uuidsGenerated).put("bytes_in", bytesIn)
                    .put("bytes_out", bytesOut).put("partial", partial).put("open_at_stop", openAtStop);
        }
    }

    /** Waits until no connection is open or the deadline passed; returns how many are still open. */
    private int awaitEmpty(long deadline) throws InterruptedException {
        synchronized (open) {
            long left;
            while (!open.isEmpty() && (left = deadline - System.nanoTime()) > 0) {
                TimeUnit.NANOSECONDS.timedWait(open, left);
            }
            return open.size();
        }
    }
}
