package corobench.virtual;

import corobench.common.BadInput;
import corobench.common.Cli;
import corobench.common.PingHttp;
import corobench.common.Queues;
import corobench.common.RuntimeInfo;
import corobench.common.Servers;
import corobench.common.ThreadBench;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import jdk.management.VirtualThreadSchedulerMXBean;

/**
 * java-virtual: one virtual thread per task, on the JDK's default virtual-thread scheduler (a
 * ForkJoinPool of carrier threads). --threads N sets the scheduler's parallelism through
 * jdk.virtualThreadScheduler.parallelism before the first virtual thread exists; the reported
 * thread count is the parallelism the scheduler itself reports.
 *
 * <p>Servers: echo with a virtual thread per connection on blocking java.net sockets; http on the
 * JDK's HttpServer with a virtual thread per request (newVirtualThreadPerTaskExecutor).
 */
public final class Main {
    private static final String PARALLELISM = "jdk.virtualThreadScheduler.parallelism";
    private static final String MAX_POOL_SIZE = "jdk.virtualThreadScheduler.maxPoolSize";

    private Main() {}

    public static void main(String[] args) {
        // ForkJoinPool's parallelism is at most 32767.
        Cli.Spec spec = new Cli.Spec("java-virtual", true, 32767, Map.of("blocking", List.of("stream")));
        Cli.main(spec, args, p -> {
            int wanted = switch (p) {
                case Cli.Chain c -> c.threads();
                case Cli.Tasks t -> t.threads();
                case Cli.Blocking b -> b.threads();
                case Cli.Server s -> s.threads();
                case Cli.Info i -> 0;
            };
            if (wanted > 0) {
                String set = System.getProperty(PARALLELISM);
                if (set != null && !set.equals(Integer.toString(wanted))) {
                    throw new BadInput("--threads " + wanted + " contradicts -D" + PARALLELISM + "=" + set);
                }
                System.setProperty(PARALLELISM, Integer.toString(wanted));
            }
            // The parallelism the default scheduler takes when it is created (JDK 25
            // java.lang.VirtualThread.createDefaultScheduler: the property, else the CPUs this JVM
            // may use). Read here rather than from VirtualThreadSchedulerMXBean: the management
            // classes that bean loads cost every run 1 to 10 MiB of peak RSS (README, "tasks"),
            // so only `info` asks the scheduler itself, and its line shows that the two agree.
            String configured = System.getProperty(PARALLELISM);
            int parallelism = configured != null ? Integer.parseInt(configured) : Runtime.getRuntime().availableProcessors();
            // The most carriers the scheduler may run, compensation for blocked ones included
            // (JDK 25 java.lang.VirtualThread.createDefaultScheduler: max(parallelism, 256) unless set).
            String max = System.getProperty(MAX_POOL_SIZE);
            int maxPoolSize = max != null ? Integer.parseInt(max) : Math.max(parallelism, 256);
            return switch (p) {
                case Cli.Server s when s.isEcho() -> Servers.echo(s, parallelism, Thread.ofVirtual());
                case Cli.Server s -> PingHttp.run(s, parallelism, Executors.newVirtualThreadPerTaskExecutor(),
                        new PingHttp.Striped());
                case Cli.Info i -> RuntimeInfo.jvm().put("scheduler_parallelism",
                                ManagementFactory.getPlatformMXBean(VirtualThreadSchedulerMXBean.class).getParallelism())
                        .put("scheduler_max_pool_size", maxPoolSize);
                default -> new ThreadBench(Thread.ofVirtual(), "virtual threads", Queues.factory("array"),
                        parallelism, tasks -> maxPoolSize).run(p);
            };
        });
    }
}
