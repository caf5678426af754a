package corobench.common;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;

/**
 * The manifest's {@code info} line: the JVM settings that shape the figures, as this JVM (same
 * binary, same flags as the runs) sees them: version, GC, heap limits, CPUs.
 */
public final class RuntimeInfo {
    private RuntimeInfo() {}

    private static final String[] GCS = {
        "UseSerialGC", "Serial", "UseParallelGC", "Parallel", "UseG1GC", "G1", "UseZGC", "Z",
        "UseShenandoahGC", "Shenandoah", "UseEpsilonGC", "Epsilon",
    };

    /** The common part; runtimes append their own pool settings. */
    public static Json jvm() {
        HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        String gc = "unknown";
        for (int i = 0; i < GCS.length; i += 2) {
            if (flag(hs, GCS[i]).equals("true")) {
                gc = GCS[i + 1];
            }
        }
        long mib = 1024 * 1024;
        return new Json().put("jvm", System.getProperty("java.vm.version"))
                .put("vendor", System.getProperty("java.vm.vendor"))
                .put("gc", gc)
                .put("max_heap_mib", Long.parseLong(flag(hs, "MaxHeapSize")) / mib)
                .put("initial_heap_mib", Long.parseLong(flag(hs, "InitialHeapSize")) / mib)
                .put("thread_stack_kib", Long.parseLong(flag(hs, "ThreadStackSize")))
                .put("cpus", Runtime.getRuntime().availableProcessors());
    }

    private static String flag(HotSpotDiagnosticMXBean hs, String name) {
        try {
            return hs.getVMOption(name).getValue();
        } catch (IllegalArgumentException e) {
            return "";
        }
    }
}
