// tasks: N tasks started with Task.Run, each awaiting Task.Delay(D) and returning 1; the results
// are summed from Task.WhenAll. This is the shape of the .NET program in the public
// "memory of 1M tasks" comparison (Task.Run + Task.Delay + Task.WhenAll), run here on Mono.
using System;
using System.Diagnostics;
using System.Threading.Tasks;

namespace Corobench.Mono
{
    static class Tasks
    {
        public static Json Run(TasksParams p, int threads)
        {
            int n = p.Tasks, d = p.SleepMs;
            var tasks = new Task<int>[n];
            // One delegate for every task: a lambda that captured a loop variable would allocate
            // a closure per spawn. The delay is read from a static field.
            delay = d;
            Func<Task<int>> body = SleepThenOne;

            long start = Stopwatch.GetTimestamp();
            for (int i = 0; i < n; i++)
                tasks[i] = Task.Run(body);
            long spawned = Stopwatch.GetTimestamp();
            int[] results = Task.WhenAll(tasks).GetAwaiter().GetResult();
            long end = Stopwatch.GetTimestamp();

            long sum = 0;
            foreach (int r in results)
                sum += r;
            return new Json("tasks").Int("tasks", n).Int("sleep_ms", d).Int("threads", threads).Int("checksum", sum)
                .Int("spawn_ns", Clock.Ns(spawned - start)).Int("elapsed_ns", Math.Max(1, Clock.Ns(end - start)));
        }

        static int delay;

        static async Task<int> SleepThenOne()
        {
            await Task.Delay(delay);
            return 1;
        }
    }

    static class Clock
    {
        // Stopwatch ticks to nanoseconds (Mono on Linux: 100 ns ticks from CLOCK_MONOTONIC).
        static readonly double NsPerTick = 1e9 / Stopwatch.Frequency;

        public static long Ns(long ticks) { return (long)(ticks * NsPerTick); }
    }
}
