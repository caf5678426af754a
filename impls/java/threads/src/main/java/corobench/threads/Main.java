package corobench.threads;

import corobench.common.Cli;
import corobench.common.PingHttp;
import corobench.common.Queues;
import corobench.common.RuntimeInfo;
import corobench.common.Servers;
import corobench.common.ThreadBench;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;

/**
 * java-threads: one platform (OS) thread per task. The OS schedules them on every core, so the
 * reported thread count is the number of processors the JVM may use; --threads is refused.
 *
 * <p>Servers: echo with a platform thread per connection (concurrent) or every connection on the
 * accepting thread (serial); http on the JDK's HttpServer with a fixed pool of one platform thread
 * per processor.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        Cli.Spec spec = new Cli.Spec("java-threads", false, 0,
                Map.of("blocking", List.of("stream"), "echo", List.of("concurrent", "serial")));
        int cpus = Runtime.getRuntime().availableProcessors();
        Cli.main(spec, args, p -> switch (p) {
            // thread per connection: the accepting thread is the one the runtime's count refers to
            case Cli.Server s when s.isEcho() ->
                    Servers.echo(s, 1, s.variant().equals("serial") ? null : Thread.ofPlatform());
            case Cli.Server s -> {
                PingHttp.PerThread tally = new PingHttp.PerThread();
                yield PingHttp.run(s, cpus, Executors.newFixedThreadPool(cpus, tally), tally);
            }
            case Cli.Info i -> RuntimeInfo.jvm().put("http_pool_threads", cpus);
            default -> new ThreadBench(Thread.ofPlatform(), "threads", Queues.factory("array"), cpus,
                    tasks -> tasks).run(p); // blocking: a thread per task
        });
    }
}
