package corobench.threads;

import corobench.common.Cli;
import corobench.common.Queues;
import corobench.common.ThreadBench;
import java.util.List;

/**
 * java-threads: one platform (OS) thread per task. The OS schedules them on every core, so the
 * reported thread count is the number of processors the JVM may use; --threads is refused.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        Cli.Spec spec = new Cli.Spec("java-threads", false, 0, List.of("stream"));
        Cli.main(spec, args, p -> new ThreadBench(Thread.ofPlatform(), "threads", Queues.factory("array"),
                Runtime.getRuntime().availableProcessors()).run(p));
    }
}
