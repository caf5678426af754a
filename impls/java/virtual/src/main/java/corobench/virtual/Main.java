package corobench.virtual;

import corobench.common.BadInput;
import corobench.common.Cli;
import corobench.common.Queues;
import corobench.common.ThreadBench;
import java.lang.management.ManagementFactory;
import java.util.List;
import jdk.management.VirtualThreadSchedulerMXBean;

/**
 * java-virtual: one virtual thread per task, on the JDK's default virtual-thread scheduler (a
 * ForkJoinPool of carrier threads). --threads N sets the scheduler's parallelism through
 * jdk.virtualThreadScheduler.parallelism before the first virtual thread exists; the reported
 * thread count is the parallelism the scheduler itself reports.
 */
public final class Main {
    private static final String PARALLELISM = "jdk.virtualThreadScheduler.parallelism";

    private Main() {}

    public static void main(String[] args) {
        // ForkJoinPool's parallelism is at most 32767.
        Cli.Spec spec = new Cli.Spec("java-virtual", true, 32767, List.of("stream"));
        Cli.main(spec, args, p -> {
            int wanted = switch (p) {
                case Cli.Chain c -> c.threads();
                case Cli.Tasks t -> t.threads();
                case Cli.Blocking b -> b.threads();
            };
            if (wanted > 0) {
                String set = System.getProperty(PARALLELISM);
                if (set != null && !set.equals(Integer.toString(wanted))) {
                    throw new BadInput("--threads " + wanted + " contradicts -D" + PARALLELISM + "=" + set);
                }
                System.setProperty(PARALLELISM, Integer.toString(wanted));
            }
            int parallelism = ManagementFactory.getPlatformMXBean(VirtualThreadSchedulerMXBean.class).getParallelism();
            if (wanted > 0 && parallelism != wanted) {
                throw new IllegalStateException("virtual-thread scheduler parallelism is " + parallelism
                        + ", not " + wanted + " (was it created before main?)");
            }
            return new ThreadBench(Thread.ofVirtual(), "virtual threads", Queues.factory("array"), parallelism).run(p);
        });
    }
}
