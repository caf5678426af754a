// blocking: per iteration T tasks (Task.Run) each read B bytes of /dev/urandom and write them to
// /dev/null through FileStream, either with synchronous calls inside the task (sync) or with
// FileStream opened for asynchronous I/O and awaited ReadAsync/WriteAsync (async).
using System;
using System.Diagnostics;
using System.IO;
using System.Threading;
using System.Threading.Tasks;

namespace Corobench.Mono
{
    static class Blocking
    {
        // FileStream buffers 4096 bytes by default: reading 10 bytes of /dev/urandom through it
        // would read 4096. bufferSize 1 (Mono raises it to 8) makes a read of B >= 8 bytes go
        // straight to the file, so each task reads about the B bytes it asked for.
        const int BufferSize = 1;

        public static Json Run(BlockingParams p, int threads)
        {
            bool async = p.Variant == "async";
            int t = p.Tasks, b = p.Bytes;
            // One buffer per task slot, made once and reused by every iteration.
            var buffers = new byte[t][];
            for (int i = 0; i < t; i++)
                buffers[i] = new byte[b];
            var tasks = new Task<int>[t];

            Iteration(tasks, buffers, async, 0); // the unmeasured warm-up iteration
            long total = 0;
            long start = Stopwatch.GetTimestamp();
            for (long it = 1; it <= p.Iterations; it++)
                total += Iteration(tasks, buffers, async, it);
            long elapsed = Clock.Ns(Stopwatch.GetTimestamp() - start);

            int workerMax, ioMax;
            ThreadPool.GetMaxThreads(out workerMax, out ioMax);
            var json = new Json("blocking").Int("tasks", t).Int("iterations", p.Iterations).Int("bytes", b);
            if (p.VariantGiven)
                json.Str("variant", p.Variant);
            // async: Mono's FileStream runs each read/write as a thread-pool work item (a delegate
            // BeginInvoke), so the pool's limit bounds the blocking calls; sync: the calls are made
            // on the worker threads that run the tasks.
            return json.Int("threads", threads).Int("pool_threads", async ? workerMax : 0)
                .Int("checksum", total).Int("elapsed_ns", Math.Max(1, elapsed));
        }

        static long Iteration(Task<int>[] tasks, byte[][] buffers, bool async, long iteration)
        {
            for (int i = 0; i < tasks.Length; i++)
            {
                byte[] buf = buffers[i];
                tasks[i] = async ? Task.Run(() => CopyAsync(buf)) : Task.Run(() => CopySync(buf));
            }
            int[] written;
            try
            {
                written = Task.WhenAll(tasks).GetAwaiter().GetResult();
            }
            catch (Exception e)
            {
                int failed = 0;
                foreach (var task in tasks)
                    if (task.IsFaulted)
                        failed++;
                string what = "blocking iteration " + iteration + ": " + failed + " of " + tasks.Length + " tasks failed: "
                    + e.Message;
                if (IsResourceError(e))
                    throw new Refused(what);
                throw new IOException(what, e);
            }
            long sum = 0;
            foreach (int w in written)
                sum += w;
            return sum;
        }

        static int CopySync(byte[] buf)
        {
            using (var src = new FileStream("/dev/urandom", FileMode.Open, FileAccess.Read, FileShare.ReadWrite, BufferSize))
            {
                for (int got = 0; got < buf.Length;)
                {
                    int n = src.Read(buf, got, buf.Length - got);
                    if (n == 0)
                        throw new EndOfStreamException("/dev/urandom: end of file");
                    got += n;
                }
            }
            using (var dst = new FileStream("/dev/null", FileMode.Open, FileAccess.Write, FileShare.ReadWrite, BufferSize))
                dst.Write(buf, 0, buf.Length); // writes all of it or throws
            return buf.Length;
        }

        static async Task<int> CopyAsync(byte[] buf)
        {
            using (var src = new FileStream("/dev/urandom", FileMode.Open, FileAccess.Read, FileShare.ReadWrite, BufferSize, true))
            {
                for (int got = 0; got < buf.Length;)
                {
                    int n = await src.ReadAsync(buf, got, buf.Length - got);
                    if (n == 0)
                        throw new EndOfStreamException("/dev/urandom: end of file");
                    got += n;
                }
            }
            using (var dst = new FileStream("/dev/null", FileMode.Open, FileAccess.Write, FileShare.ReadWrite, BufferSize, true))
                await dst.WriteAsync(buf, 0, buf.Length);
            return buf.Length;
        }

        /// <summary>Out of file descriptors or memory (EMFILE/ENFILE/ENOMEM): the machine refused.</summary>
        static bool IsResourceError(Exception e)
        {
            e = Cli.Unwrap(e);
            if (e is OutOfMemoryException)
                return true;
            string m = e.Message ?? "";
            return m.IndexOf("Too many open files", StringComparison.OrdinalIgnoreCase) >= 0
                || m.IndexOf("Not enough memory", StringComparison.OrdinalIgnoreCase) >= 0
                || m.IndexOf("Cannot allocate memory", StringComparison.OrdinalIgnoreCase) >= 0;
        }
    }
}
