package corobench.common;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The http scenario on the JDK's own server, {@code com.sun.net.httpserver.HttpServer}: one
 * dispatcher thread accepts and selects, and every request (an "exchange") runs on the given
 * executor. The server hides its connections, so the final line has {@code "connections": null};
 * requests are counted by a {@link Tally}.
 */
public final class PingHttp {
    private PingHttp() {}

    /** Counts 200 and 404 responses without a lock per request. */
    public interface Tally {
        void ok();

        void notFound();

        /** {ok, notFound}; called after the executor has terminated. */
        long[] sum();
    }

    /**
     * Per worker thread: the pool's threads are {@link Worker}s with their own plain counters,
     * summed at stop (after the pool terminated, so every write is visible). For a fixed pool.
     */
    public static final class PerThread implements Tally, ThreadFactory {
        private final List<Worker> workers = new ArrayList<>();

        private static final class Worker extends Thread {
            long ok;
            long notFound;

            Worker(Runnable r, String name) {
                super(r, name);
            }
        }

        @Override
        public synchronized Thread newThread(Runnable r) {
            Worker w = new Worker(r, "http-worker-" + workers.size());
            workers.add(w);
            return w;
        }

        @Override
        public void ok() {
            ((Worker) Thread.currentThread()).ok++;
        }

        @Override
        public void notFound() {
            ((Worker) Thread.currentThread()).notFound++;
        }

        @Override
        public synchronized long[] sum() {
            long[] s = new long[2];
            for (Worker w : workers) {
                s[0] += w.ok;
                s[1] += w.notFound;
            }
            return s;
        }
    }

    /**
     * A striped counter ({@link LongAdder}: per-CPU cells, no lock) for executors that start a new
     * thread per request (virtual threads), where neither a connection nor a long-lived worker
     * thread exists to keep a count in.
     */
    public static final class Striped implements Tally {
        private final LongAdder ok = new LongAdder();
        private final LongAdder notFound = new LongAdder();

        @Override
        public void ok() {
            ok.increment();
        }

        @Override
        public void notFound() {
            notFound.increment();
        }

        @Override
        public long[] sum() {
            return new long[] {ok.sum(), notFound.sum()};
        }
    }

    /** GET /ping/TOKEN → 200 text/plain TOKEN; any other method or path → 404. */
    private record Ping(Tally tally) implements HttpHandler {
        @Override
        public void handle(HttpExchange ex) throws IOException {
            try (ex) {
                String path = ex.getRequestURI().getRawPath();
                if (path != null && path.startsWith("/ping/") && isToken(path, 6) && ex.getRequestMethod().equals("GET")) {
                    byte[] body = path.substring(6).getBytes(StandardCharsets.ISO_8859_1);
                    ex.getResponseHeaders().set("Content-Type", "text/plain");
                    ex.sendResponseHeaders(200, body.length);
                    try (OutputStream out = ex.getResponseBody()) {
                        out.write(body);
                    }
                    tally.ok();
                } else {
                    ex.sendResponseHeaders(404, -1); // -1: no body, "Content-length: 0"
                    tally.notFound();
                }
            }
        }

        /** 1..64 characters of [A-Za-z0-9_-] from {@code from} to the end. */
        private static boolean isToken(String s, int from) {
            int n = s.length() - from;
            if (n < 1 || n > 64) {
                return false;
            }
            for (int i = from; i < s.length(); i++) {
                char c = s.charAt(i);
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Runs the server until SIGTERM; {@code threads} is the count reported. */
    public static Json run(Cli.Server p, int threads, ExecutorService executor, Tally tally) throws InterruptedException {
        // The JDK server sets TCP_NODELAY on accepted connections only when asked (read once, when
        // the first server is created).
        System.setProperty("sun.net.httpserver.nodelay", "true");
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(p.address(), p.port()), EchoServer.BACKLOG);
        } catch (IOException e) {
            throw Servers.refusedBind(p, e);
        }
        server.createContext("/", new Ping(tally));
        server.setExecutor(executor);
        Servers.stopOnSignal(() -> {
            server.stop(2); // closes the listener; waits at most 2 s for exchanges in progress; closes all
            executor.shutdown();
            executor.awaitTermination(1, TimeUnit.SECONDS);
            long[] s = tally.sum();
            return p.variantTo(new Json().put("scenario", "http")).put("threads", threads)
                    .put("requests", s[0]).putNull("connections").put("not_found", s[1]);
        });
        server.start();
        Servers.ready(p, server.getAddress().getPort(), threads);
        return Servers.parkForever();
    }
}
