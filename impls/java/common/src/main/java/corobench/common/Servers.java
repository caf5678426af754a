package corobench.common;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** What every server shares: binding, the ready line, and the stop on SIGTERM/SIGINT. */
public final class Servers {
    private Servers() {}

    /** A listening socket on the requested address; a refused bind is exit 3. */
    static ServerSocket listen(Cli.Server p) {
        ServerSocket s = null;
        try {
            s = new ServerSocket();
            s.bind(new InetSocketAddress(p.address(), p.port()), EchoServer.BACKLOG);
            return s;
        } catch (IOException e) {
            if (s != null) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // the bind failure is what we report
                }
            }
            throw refusedBind(p, e);
        }
    }

    static ResourceRefused refusedBind(Cli.Server p, IOException e) {
        return new ResourceRefused("bind/listen " + hostPort(p.host(), p.port()) + " failed: " + e.getMessage());
    }

    private static String hostPort(String host, int port) {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }

    /** Prints the ready line (flushed): every listener is bound and listening. */
    public static void ready(Cli.Server p, int port, int threads) {
        Json json = new Json().put("ready", true).put("scenario", p.scenario()).put("host", p.host()).put("port", port);
        if (p.isEcho()) {
            json.put("size", p.size()).put("uuids", p.uuids()).put("per_connection", p.perConnection());
        }
        System.out.println(p.variantTo(json.put("threads", threads)));
        System.out.flush();
    }

    /**
     * On SIGTERM or SIGINT the JVM runs its shutdown hooks; ours runs {@code stop} (stop accepting,
     * wait at most 2 s for open connections, return the final line), prints the line and halts with
     * status 0. Halting is what makes the exit status 0: a JVM that finishes its shutdown after a
     * signal exits with 128 + the signal's number (143 for SIGTERM).
     */
    public static void stopOnSignal(Callable<Json> stop) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            String line;
            try {
                line = stop.call().toString();
            } catch (Throwable e) {
                System.err.println("stop failed: " + e);
                System.err.flush();
                Runtime.getRuntime().halt(1);
                return;
            }
            System.out.println(line);
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }, "corobench-stop"));
    }

    /** The serving thread's last act: wait for the shutdown hook to halt the JVM. */
    public static Json parkForever() throws InterruptedException {
        new CountDownLatch(1).await();
        throw new IllegalStateException("unreachable");
    }

    /** Runs the echo server on the calling thread until SIGTERM (see {@link EchoServer}). */
    public static Json echo(Cli.Server p, int threads, Thread.Builder perConnection) throws InterruptedException {
        EchoServer server = EchoServer.bind(p, threads, perConnection);
        stopOnSignal(server::stop);
        ready(p, server.port(), threads);
        server.serve();
        return parkForever();
    }
}
