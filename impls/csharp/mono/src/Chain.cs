// chain: W receivers, each owning one bounded BufferBlock<Event> of capacity Q, and W senders,
// one per block, each sending E events; all are tasks on the thread pool.
using System;
using System.Diagnostics;
using System.Threading.Tasks;
using System.Threading.Tasks.Dataflow;

namespace Corobench.Mono
{
    /// <summary>"A message that is one of several kinds": an abstract class, one sealed class per kind.</summary>
    abstract class Event { }

    sealed class IntEvent : Event
    {
        public readonly long Value;
        public IntEvent(long value) { Value = value; }
    }

    /// <summary>str: C#'s ordinary way to pass a string: the immutable string is shared, not copied.</summary>
    sealed class StrEvent : Event
    {
        public readonly string Value;
        public StrEvent(string value) { Value = value; }
    }

    /// <summary>The one shared object that str_ptr events point to.</summary>
    sealed class StringHolder
    {
        public readonly string Value;
        public StringHolder(string value) { Value = value; }
    }

    sealed class StrPtrEvent : Event
    {
        public readonly StringHolder Holder;
        public StrPtrEvent(StringHolder holder) { Holder = holder; }
    }

    /// <summary>str_clone: a string of its own (a new character buffer) per event.</summary>
    sealed class StrCloneEvent : Event
    {
        public readonly string Value;
        public StrCloneEvent(string value) { Value = value; }
    }

    static class Chain
    {
        public static Json Run(ChainParams p, int threads)
        {
            // Everything the events share is made before the clock starts. The strings are ASCII,
            // so their length in chars is their length in bytes.
            string shared = null;
            char[] chars = null;
            if (p.EType != EType.Int)
            {
                chars = new char[p.ESize];
                for (int i = 0; i < chars.Length; i++)
                    chars[i] = (char)('a' + i % 26);
                shared = new string(chars);
            }
            var holder = new StringHolder(shared);

            for (int k = 0; k < p.Warmup; k++)
                Pass(p, shared, holder, chars);
            var r = Pass(p, shared, holder, chars);
            return new Json("chain").Int("workers", p.Workers).Int("events", p.Events).Int("queue", p.Queue)
                .Str("etype", Cli.ETypeNames[(int)p.EType]).Int("esize", p.ESize).Int("threads", threads)
                .Int("warmup", p.Warmup).Int("received", r.Received).Int("checksum", r.Checksum)
                .Int("elapsed_ns", r.ElapsedNs);
        }

        struct PassResult
        {
            public long Received, Checksum, ElapsedNs;
        }

        static PassResult Pass(ChainParams p, string shared, StringHolder holder, char[] chars)
        {
            int w = p.Workers;
            long e = p.Events, s = p.ESize;
            var sums = new long[w];
            var counts = new long[w];
            var receivers = new Task[w];
            var options = new DataflowBlockOptions { BoundedCapacity = p.Queue };

            long start = Stopwatch.GetTimestamp();
            for (int i = 0; i < w; i++)
            {
                var q = new BufferBlock<Event>(options);
                int slot = i;
                receivers[i] = Task.Run(() => Receive(q, e, sums, counts, slot));
                switch (p.EType)
                {
                    case EType.Int: Task.Run(() => Guard(q, SendInt(q, e, s))); break;
                    case EType.Str: Task.Run(() => Guard(q, SendStr(q, e, shared))); break;
                    case EType.StrPtr: Task.Run(() => Guard(q, SendStrPtr(q, e, holder))); break;
                    default: Task.Run(() => Guard(q, SendStrClone(q, e, chars))); break;
                }
            }
            // Senders are not awaited: each receiver finishes only after its sender sent everything.
            Task.WhenAll(receivers).GetAwaiter().GetResult();
            long elapsed = Clock.Ns(Stopwatch.GetTimestamp() - start);

            var r = new PassResult { ElapsedNs = Math.Max(1, elapsed) };
            for (int i = 0; i < w; i++)
            {
                r.Received += counts[i];
                r.Checksum += sums[i];
            }
            if (r.Received != w * e || r.Checksum != p.Expected)
                throw new InvalidOperationException("chain: received " + r.Received + " events, checksum " + r.Checksum
                    + "; expected " + (w * e) + " and " + p.Expected);
            return r;
        }

        // The Dataflow docs' consumer loop: take what is there without a task per item, and only
        // await OutputAvailableAsync when the block is empty.
        static async Task Receive(BufferBlock<Event> q, long events, long[] sums, long[] counts, int slot)
        {
            long sum = 0, n = 0;
            Event ev;
            while (n < events)
            {
                if (!q.TryReceive(out ev))
                {
                    if (!await q.OutputAvailableAsync())
                    {
                        await q.Completion; // rethrows the sender's failure (see Guard)
                        throw new InvalidOperationException("chain: queue completed early");
                    }
                    continue;
                }
                n++;
                // The weight depends on the data, so neither the type test nor the sum can be removed.
                // (mcs has no switch on types; is-patterns are the same test.)
                if (ev is IntEvent i)
                    sum += i.Value;
                else if (ev is StrEvent str)
                    sum += str.Value.Length;
                else if (ev is StrPtrEvent ptr)
                    sum += ptr.Holder.Value.Length;
                else if (ev is StrCloneEvent clone)
                    sum += clone.Value.Length;
                else
                    throw new InvalidOperationException("chain: unknown event " + ev);
            }
            sums[slot] = sum;
            counts[slot] = n;
        }

        /// <summary>A sender that fails (out of memory) faults its block, so its receiver stops too.</summary>
        static async Task Guard(BufferBlock<Event> q, Task sender)
        {
            try
            {
                await sender;
            }
            catch (Exception ex)
            {
                ((IDataflowBlock)q).Fault(ex);
            }
        }

        // SendAsync completes synchronously (a cached task) while the block has room and parks the
        // sender when it is full. One sender per event type keeps the type switch out of the loop.
        static async Task SendInt(BufferBlock<Event> q, long events, long value)
        {
            for (long k = 0; k < events; k++)
                await q.SendAsync(new IntEvent(value));
        }

        static async Task SendStr(BufferBlock<Event> q, long events, string s)
        {
            for (long k = 0; k < events; k++)
                await q.SendAsync(new StrEvent(s));
        }

        static async Task SendStrPtr(BufferBlock<Event> q, long events, StringHolder holder)
        {
            for (long k = 0; k < events; k++)
                await q.SendAsync(new StrPtrEvent(holder));
        }

        static async Task SendStrClone(BufferBlock<Event> q, long events, char[] chars)
        {
            for (long k = 0; k < events; k++)
                await q.SendAsync(new StrCloneEvent(new string(chars)));
        }
    }
}
