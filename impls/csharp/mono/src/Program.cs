// corobench-mono: the corobench scenarios in C# on Mono (not .NET): tasks on Mono's thread pool.
using System.Threading;

namespace Corobench.Mono
{
    static class Program
    {
        static readonly Spec Spec = new Spec
        {
            Id = "csharp-mono",
            // Mono's thread pool cannot be held to N threads (see README): --threads is refused.
            ThreadsFlag = false,
            BlockingVariants = new[] { "async", "sync" },
            EchoVariants = new[] { "concurrent", "serial" },
        };

        static int Main(string[] args)
        {
            return Cli.Run(Spec, args, Run);
        }

        static Json Run(object p)
        {
            int threads = PoolThreads();
            if (p is ChainParams chain)
                return Chain.Run(chain, threads);
            if (p is TasksParams tasks)
                return Tasks.Run(tasks, threads);
            if (p is BlockingParams blocking)
                return Blocking.Run(blocking, threads);
            var server = (ServerParams)p;
            Server s = server.Scenario == "echo" ? (Server)new EchoServer(server, threads) : new HttpServer(server, threads);
            Cli.PrintLine(s.Run().ToString());
            // The final line is out and flushed: nothing is left to do. Ending here rather than in
            // Mono's shutdown (which stops every pool thread, some still in socket calls) because
            // a server now and then did not exit within the protocol's 5 s of SIGTERM.
            global::Mono.Unix.Native.Syscall._exit(0);
            return null;
        }

        /// <summary>
        /// The worker threads the pool keeps running: its minimum, which Mono sets to the CPUs in
        /// the process's affinity mask (sched_getaffinity) times MONO_THREADS_PER_CPU (default 1).
        /// </summary>
        public static int PoolThreads()
        {
            int worker, io;
            ThreadPool.GetMinThreads(out worker, out io);
            return worker;
        }
    }
}
