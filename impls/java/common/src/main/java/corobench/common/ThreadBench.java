package corobench.common;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.function.IntFunction;
import java.util.function.IntUnaryOperator;

/**
 * The three scenarios written against {@link Thread.Builder}: java-threads passes
 * {@code Thread.ofPlatform()}, java-virtual passes {@code Thread.ofVirtual()}. Everything else
 * (queues, events, sleeping, blocking I/O) is the same plain JDK code for both.
 */
public final class ThreadBench {
    private final Thread.Builder builder;
    private final String kind;
    private final IntFunction<BlockingQueue<Event>> queues;
    private final int threads;
    private final IntUnaryOperator blockingPool;

    /**
     * @param builder       how every task is started
     * @param kind          "threads" or "virtual threads", for the resource-refused message
     * @param queues        makes the bounded queue of a given capacity for chain
     * @param threads       the worker-thread count reported in the output
     * @param blockingPool  blocking's pool_threads for a given number of tasks per iteration: the
     *                      most threads that may make the blocking calls at once
     */
    public ThreadBench(Thread.Builder builder, String kind, IntFunction<BlockingQueue<Event>> queues, int threads,
                       IntUnaryOperator blockingPool) {
        this.builder = builder;
        this.kind = kind;
        this.queues = queues;
        this.threads = threads;
        this.blockingPool = blockingPool;
    }

    public Json run(Cli.Params p) throws Exception {
        return switch (p) {
            case Cli.Chain c -> chain(c);
            case Cli.Tasks t -> tasks(t);
            case Cli.Blocking b -> blocking(b);
            case Cli.Server s -> throw new IllegalArgumentException("not a batch scenario: " + s.scenario());
            case Cli.Info i -> throw new IllegalArgumentException("not a batch scenario: info");
        };
    }

    /** Starts a thread; a refused thread becomes {@link ResourceRefused} (exit 3). */
    private Thread start(Runnable r, long started, long total) {
        try {
            return builder.start(r);
        } catch (OutOfMemoryError e) {
            throw new ResourceRefused("started " + started + " of " + total + " " + kind + ": " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------- chain

    private Json chain(Cli.Chain p) throws Exception {
        for (int k = 0; k < p.warmup(); k++) {
            chainPass(p);
        }
        long[] r = chainPass(p);
        return new Json().put("scenario", "chain").put("workers", p.workers()).put("events", p.events())
                .put("queue", p.queue()).put("etype", p.etype().label).put("esize", p.esize())
                .put("threads", threads).put("warmup", p.warmup())
                .put("received", r[0]).put("checksum", r[1]).put("elapsed_ns", r[2]);
    }

    /** One full pass with fresh queues and threads; returns {received, checksum, elapsed_ns}. */
    private long[] chainPass(Cli.Chain p) throws InterruptedException {
        final int w = p.workers();
        final long e = p.events();
        final EType etype = p.etype();
        final long s = p.esize();
        // The payloads exist before the clock starts: one shared String (str), one shared holder
        // of it (str_ptr), and the Latin-1 bytes every str_clone event is decoded from.
        final String str = etype.isString() ? "x".repeat((int) s) : null;
        final Event.Holder holder = new Event.Holder(str);
        final byte[] bytes = etype == EType.STR_CLONE ? str.getBytes(StandardCharsets.ISO_8859_1) : null;
        final long[] sums = new long[w];
        final long[] counts = new long[w];
        final Thread[] receivers = new Thread[w];
        final Thread[] senders = new Thread[w];

        final long t0 = System.nanoTime();
        for (int i = 0; i < w; i++) {
            final BlockingQueue<Event> q = queues.apply(p.queue());
            final int slot = i;
            receivers[i] = start(() -> receive(q, e, sums, counts, slot), 2L * i, 2L * w);
            senders[i] = start(() -> send(q, e, etype, s, str, holder, bytes), 2L * i + 1, 2L * w);
        }
        for (Thread t : receivers) {
            t.join();
        }
        final long elapsed = System.nanoTime() - t0;
        for (Thread t : senders) {
            t.join();
        }

        long received = 0;
        long checksum = 0;
        for (int i = 0; i < w; i++) {
            received += counts[i];
            checksum += sums[i];
        }
        if (received != w * e || checksum != p.expectedChecksum()) {
            throw new IllegalStateException("chain pass got received=" + received + " checksum=" + checksum);
        }
        return new long[] {received, checksum, elapsed};
    }

    private static void receive(BlockingQueue<Event> q, long e, long[] sums, long[] counts, int slot) {
        long sum = 0;
        long n = 0;
        try {
            for (long k = 0; k < e; k++) {
                sum += Event.weight(q.take());
                n++;
            }
        } catch (InterruptedException ex) {
            throw new IllegalStateException(ex);
        }
        sums[slot] = sum;
        counts[slot] = n;
    }

    private static void send(BlockingQueue<Event> q, long e, EType etype, long s, String str,
                             Event.Holder holder, byte[] bytes) {
        try {
            switch (etype) {
                case INT -> {
                    for (long k = 0; k < e; k++) {
                        q.put(new Event.Int(s));
                    }
                }
                case STR -> {
                    for (long k = 0; k < e; k++) {
                        q.put(new Event.Str(str));
                    }
                }
                case STR_PTR -> {
                    for (long k = 0; k < e; k++) {
                        q.put(new Event.StrPtr(holder));
                    }
                }
                case STR_CLONE -> {
                    for (long k = 0; k < e; k++) {
                        q.put(new Event.StrClone(new String(bytes, StandardCharsets.ISO_8859_1)));
                    }
                }
            }
        } catch (InterruptedException ex) {
            throw new IllegalStateException(ex);
        }
    }

    // ---------------------------------------------------------------- tasks

    private Json tasks(Cli.Tasks p) throws InterruptedException {
        final int n = p.tasks();
        final long d = p.sleepMs();
        // Each task stores 1 in its own slot and ends; main joins them all and sums. Nothing shared
        // is written while thousands of threads are alive (see README: a LongAdder and a
        // CountDownLatch here made java-threads' peak RSS bimodal).
        final byte[] done = new byte[n];
        final Thread[] started = new Thread[n];

        final long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            final int slot = i;
            started[i] = start(() -> {
                try {
                    Thread.sleep(d);
                } catch (InterruptedException ex) {
                    throw new IllegalStateException(ex);
                }
                done[slot] = 1;
            }, i, n);
        }
        final long spawned = System.nanoTime() - t0;
        for (Thread t : started) {
            t.join();
        }
        final long elapsed = System.nanoTime() - t0;

        long checksum = 0;
        for (byte b : done) {
            checksum += b;
        }
        return new Json().put("scenario", "tasks").put("tasks", n).put("sleep_ms", d).put("threads", threads)
                .put("checksum", checksum).put("spawn_ns", spawned).put("elapsed_ns", elapsed);
    }

    // ---------------------------------------------------------------- blocking

    private Json blocking(Cli.Blocking p) throws InterruptedException {
        final int n = p.tasks();
        final int b = p.bytes();
        final Thread[] workers = new Thread[n];
        // Task i adds its bytes to slot i (one writer per slot; the joins order the iterations).
        final long[] written = new long[n];
        final Throwable[] failure = new Throwable[1];
        final Runnable[] tasks = new Runnable[n];
        for (int i = 0; i < n; i++) {
            final int slot = i;
            tasks[i] = () -> {
                try {
                    written[slot] += copy(b);
                } catch (IOException ex) {
                    synchronized (failure) {
                        failure[0] = ex;
                    }
                }
            };
        }

        iteration(workers, tasks, failure); // warm-up, not measured
        Arrays.fill(written, 0);
        final long t0 = System.nanoTime();
        for (long it = 0; it < p.iterations(); it++) {
            iteration(workers, tasks, failure);
        }
        final long elapsed = System.nanoTime() - t0;
        long checksum = 0;
        for (long w : written) {
            checksum += w;
        }

        return new Json().put("scenario", "blocking").put("tasks", n).put("iterations", p.iterations())
                .put("bytes", b).put("variant", p.variant()).put("threads", threads)
                .put("pool_threads", blockingPool.applyAsInt(n)).put("checksum", checksum).put("elapsed_ns", elapsed);
    }

    private void iteration(Thread[] workers, Runnable[] tasks, Throwable[] failure) throws InterruptedException {
        for (int i = 0; i < workers.length; i++) {
            workers[i] = start(tasks[i], i, workers.length);
        }
        for (Thread t : workers) {
            t.join();
        }
        synchronized (failure) {
            if (failure[0] != null) {
                String m = String.valueOf(failure[0].getMessage());
                if (m.contains("Too many open files")) {
                    throw new ResourceRefused("file descriptors refused: " + m);
                }
                throw new IllegalStateException(failure[0]);
            }
        }
    }

    /** Reads b bytes from /dev/urandom, writes them to /dev/null; returns the bytes written. */
    public static int copy(int b) throws IOException {
        byte[] buf = new byte[b];
        try (FileInputStream in = new FileInputStream("/dev/urandom")) {
            int off = 0;
            while (off < b) {
                int r = in.read(buf, off, b - off);
                if (r < 0) {
                    throw new IOException("/dev/urandom: unexpected end of file");
                }
                off += r;
            }
        }
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            out.write(buf, 0, b);
        }
        return b;
    }
}
