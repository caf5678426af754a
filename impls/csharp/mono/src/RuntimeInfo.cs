// runtime-info: one line of the Mono settings that shape corobench's figures (manifest `info`).
using System;
using System.Runtime;
using System.Threading;

static class RuntimeInfo
{
    static void Main()
    {
        int minWorker, minIo, maxWorker, maxIo;
        ThreadPool.GetMinThreads(out minWorker, out minIo);
        ThreadPool.GetMaxThreads(out maxWorker, out maxIo);
        string version = (string)Type.GetType("Mono.Runtime").GetMethod("GetDisplayName",
            System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Static).Invoke(null, null);
        Console.WriteLine("mono " + version + "; gc sgen" + (GCSettings.IsServerGC ? " (server)" : "")
            + ", latency " + GCSettings.LatencyMode + ", MONO_GC_PARAMS=" + (Environment.GetEnvironmentVariable("MONO_GC_PARAMS") ?? "(unset)")
            + "; cpus " + Environment.ProcessorCount + "; thread pool worker " + minWorker + "-" + maxWorker
            + ", io " + minIo + "-" + maxIo);
    }
}
