package corobench.common;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.IntFunction;

/**
 * The bounded queue used by chain. Each runtime picks its default (the faster one in our
 * measurements, see README.md); {@code -Dcorobench.queue=array|linked} overrides it so the
 * comparison can be re-run.
 */
public final class Queues {
    private Queues() {}

    public static IntFunction<BlockingQueue<Event>> factory(String dflt) throws BadInput {
        String kind = System.getProperty("corobench.queue", dflt);
        return switch (kind) {
            case "array" -> ArrayBlockingQueue::new;
            case "linked" -> LinkedBlockingQueue::new;
            default -> throw new BadInput("-Dcorobench.queue must be array or linked, got '" + kind + "'");
        };
    }
}
