// The server scenarios (docs/protocol.md, "Servers: echo and http"): TcpListener, a task per
// connection with async/await over NetworkStream, SIGTERM/SIGINT through Mono.Unix.UnixSignal.
using System;
using System.Collections.Concurrent;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Threading;
using System.Threading.Tasks;
using Mono.Unix;
using Mono.Unix.Native;

namespace Corobench.Mono
{
    /// <summary>What every server shares: listen, ready line, stop on a signal, the 2 s drain.</summary>
    abstract class Server
    {
        protected readonly ServerParams P;
        protected readonly int Threads;
        protected TcpListener Listener;
        protected volatile bool Stopping;
        /// <summary>Accepted connections: incremented by the one accept loop only.</summary>
        protected long Connections;
        /// <summary>The connections still open, so that the stop can close the ones left after 2 s.</summary>
        readonly ConcurrentDictionary<TcpClient, bool> open = new ConcurrentDictionary<TcpClient, bool>();
        protected int OpenAtStop;

        protected Server(ServerParams p, int threads)
        {
            P = p;
            Threads = threads;
        }

        public Json Run()
        {
            // Signal handlers first: a SIGTERM right after the ready line must not kill the process.
            Task stop = StopSignal();
            Listener = new TcpListener(P.Host, P.Port);
            try
            {
                Listener.Start(); // backlog: Mono's default (int.MaxValue, capped by the kernel's somaxconn)
            }
            catch (SocketException e)
            {
                throw new Refused("bind/listen " + Address(P.Host, P.Port) + " failed: " + e.Message);
            }
            int port = ((IPEndPoint)Listener.LocalEndpoint).Port;
            var ready = new Json().Bool("ready", true).Str("scenario", P.Scenario).Str("host", P.HostText).Int("port", port);
            if (P.Scenario == "echo")
                ready.Int("size", P.Size).Int("uuids", P.Uuids).Int("per_connection", P.PerConnection);
            ready.Int("threads", Threads);
            if (P.VariantGiven)
                ready.Str("variant", P.Variant);

            Task serving = Serve();
            Cli.PrintLine(ready.ToString());
            // Serving ends early only when it failed (exit 3: out of file descriptors, say).
            Task.WaitAny(stop, serving);
            if (serving.IsFaulted)
                serving.GetAwaiter().GetResult();

            Stopping = true;
            Listener.Stop();
            // The accept loop ends once its listener is closed (a serial one after the connection it
            // serves, which the drain below waits for). Counts come from the connections, not from
            // the loop, so it gets only a moment: the whole stop must fit the protocol's 5 s with
            // the 2 s drain and Mono's own exit.
            if (!Serial)
                serving.Wait(200);
            Drain();
            return Final();
        }

        /// <summary>Whether connections are served one at a time on the accepting thread.</summary>
        protected virtual bool Serial { get { return false; } }

        /// <summary>Accepts and serves until the listener is closed.</summary>
        protected abstract Task Serve();

        protected abstract Json Final();

        protected Json Begin()
        {
            var json = new Json(P.Scenario);
            if (P.Scenario == "echo")
                json.Int("size", P.Size).Int("uuids", P.Uuids).Int("per_connection", P.PerConnection);
            json.Int("threads", Threads);
            if (P.VariantGiven)
                json.Str("variant", P.Variant);
            return json;
        }

        /// <summary>
        /// Accepts one connection (null once the listener is closed); running out of file
        /// descriptors is exit 3 with how far the server got.
        /// </summary>
        protected async Task<TcpClient> AcceptAsync()
        {
            try
            {
                var c = await Listener.AcceptTcpClientAsync();
                Connections++;
                return c;
            }
            catch (ObjectDisposedException)
            {
                return null;
            }
            catch (SocketException e)
            {
                if (Stopping)
                    return null;
                throw new Refused("accepted " + Connections + " connections, then accept failed: " + e.Message);
            }
        }

        protected TcpClient AcceptBlocking()
        {
            try
            {
                var c = Listener.AcceptTcpClient();
                Connections++;
                return c;
            }
            catch (ObjectDisposedException)
            {
                return null;
            }
            catch (SocketException e)
            {
                if (Stopping)
                    return null;
                throw new Refused("accepted " + Connections + " connections, then accept failed: " + e.Message);
            }
            catch (InvalidOperationException)
            {
                return null; // the listener was stopped
            }
        }

        protected void Opened(TcpClient c)
        {
            open[c] = true;
        }

        protected void Closed(TcpClient c)
        {
            bool unused;
            open.TryRemove(c, out unused);
        }

        /// <summary>
        /// Waits (at most 2 s) for the open connections to end: the client has closed them, the
        /// server only reads their EOF. Then closes what is left and waits for those to count.
        /// </summary>
        void Drain()
        {
            var sw = Stopwatch.StartNew();
            while (!open.IsEmpty && sw.ElapsedMilliseconds < 2000)
                Thread.Sleep(5);
            var left = open.Keys;
            OpenAtStop = left.Count;
            foreach (var c in left)
                c.Close();
            sw.Restart();
            while (!open.IsEmpty && sw.ElapsedMilliseconds < 500)
                Thread.Sleep(5);
            Thread.MemoryBarrier(); // the connections' last counts are visible to the final line
        }

        /// <summary>A task that completes on SIGTERM or SIGINT.</summary>
        static Task StopSignal()
        {
            var done = new TaskCompletionSource<bool>();
            var signals = new[] { new UnixSignal(Signum.SIGTERM), new UnixSignal(Signum.SIGINT) };
            var waiter = new Thread(() =>
            {
                UnixSignal.WaitAny(signals, -1);
                done.TrySetResult(true);
            });
            waiter.IsBackground = true;
            waiter.Name = "signals";
            waiter.Start();
            return done.Task;
        }

        static string Address(IPAddress host, int port)
        {
            return host.AddressFamily == AddressFamily.InterNetworkV6 ? "[" + host + "]:" + port : host + ":" + port;
        }
    }

    /// <summary>
    /// echo: read exactly S bytes, reply with them and U Guid.NewGuid() strings, until EOF.
    /// Counts are kept per connection and added to the totals (Interlocked) when it ends.
    /// </summary>
    sealed class EchoServer : Server
    {
        long requests, bytesIn, bytesOut, partial;

        public EchoServer(ServerParams p, int threads) : base(p, threads) { }

        protected override bool Serial { get { return P.Variant == "serial"; } }

        protected override Task Serve()
        {
            if (Serial)
            {
                // One connection at a time on the accepting thread, blocking calls (the original's first round).
                var done = new TaskCompletionSource<bool>();
                var t = new Thread(() =>
                {
                    try
                    {
                        SerialLoop();
                        done.TrySetResult(true);
                    }
                    catch (Exception e)
                    {
                        done.TrySetException(e);
                    }
                });
                t.IsBackground = true;
                t.Name = "serial-accept";
                t.Start();
                return done.Task;
            }
            return AcceptLoop();
        }

        async Task AcceptLoop()
        {
            while (true)
            {
                var c = await AcceptAsync();
                if (c == null)
                    return;
                Opened(c);
                // A task per connection: it runs until its first read is pending, then the loop goes on.
                _ = ServeConnection(c);
            }
        }

        async Task ServeConnection(TcpClient c)
        {
            int size = P.Size, uuids = P.Uuids;
            long reqs = 0, read = 0;
            bool cut = false;
            try
            {
                c.NoDelay = true;
                var stream = c.GetStream();
                // The request is read straight into the head of the reply: S bytes, then U lines.
                var reply = new byte[size + 37 * uuids];
                while (true)
                {
                    int got = 0;
                    while (got < size)
                    {
                        int n;
                        try
                        {
                            n = await stream.ReadAsync(reply, got, size - got);
                        }
                        catch (Exception)
                        {
                            n = 0; // reset or closed by the stop: the same as EOF here
                        }
                        if (n == 0)
                            break;
                        got += n;
                        read += n;
                    }
                    if (got < size)
                    {
                        cut = got > 0;
                        break;
                    }
                    AppendUuids(reply, size, uuids);
                    await stream.WriteAsync(reply, 0, reply.Length); // NetworkStream writes all of it
                    if (++reqs == P.PerConnection)
                        break; // the R-th reply: the server closes the connection
                }
            }
            catch (Exception)
            {
                // a failed write ends the connection; what was written in full is counted
            }
            finally
            {
                c.Close();
                Interlocked.Add(ref requests, reqs);
                Interlocked.Add(ref bytesIn, read);
                Interlocked.Add(ref bytesOut, reqs * (size + 37L * uuids));
                if (cut)
                    Interlocked.Increment(ref partial);
                Closed(c);
            }
        }

        void SerialLoop()
        {
            int size = P.Size, uuids = P.Uuids;
            var reply = new byte[size + 37 * uuids];
            while (true)
            {
                var c = AcceptBlocking();
                if (c == null)
                    return;
                Opened(c);
                long reqs = 0, read = 0;
                bool cut = false;
                try
                {
                    c.NoDelay = true;
                    var stream = c.GetStream();
                    while (true)
                    {
                        int got = 0;
                        while (got < size)
                        {
                            int n;
                            try
                            {
                                n = stream.Read(reply, got, size - got);
                            }
                            catch (Exception)
                            {
                                n = 0;
                            }
                            if (n == 0)
                                break;
                            got += n;
                            read += n;
                        }
                        if (got < size)
                        {
                            cut = got > 0;
                            break;
                        }
                        AppendUuids(reply, size, uuids);
                        stream.Write(reply, 0, reply.Length);
                        if (++reqs == P.PerConnection)
                            break; // the R-th reply: the server closes the connection
                    }
                }
                catch (Exception)
                {
                }
                finally
                {
                    c.Close();
                    // Only this thread serves, but the final line is read on the main thread.
                    Interlocked.Add(ref requests, reqs);
                    Interlocked.Add(ref bytesIn, read);
                    Interlocked.Add(ref bytesOut, reqs * (size + 37L * uuids));
                    if (cut)
                        Interlocked.Increment(ref partial);
                    Closed(c);
                }
            }
        }

        /// <summary>U times: '\n' and a Guid.NewGuid() in its default "D" form (36 lowercase chars).</summary>
        static void AppendUuids(byte[] reply, int at, int uuids)
        {
            for (int k = 0; k < uuids; k++, at += 37)
            {
                string u = Guid.NewGuid().ToString();
                reply[at] = (byte)'\n';
                for (int j = 0; j < 36; j++)
                    reply[at + 1 + j] = (byte)u[j];
            }
        }

        protected override Json Final()
        {
            long reqs = Interlocked.Read(ref requests);
            return Begin().Int("connections", Interlocked.Read(ref Connections)).Int("requests", reqs)
                .Int("uuids_generated", reqs * P.Uuids).Int("bytes_in", Interlocked.Read(ref bytesIn))
                .Int("bytes_out", Interlocked.Read(ref bytesOut)).Int("partial", Interlocked.Read(ref partial))
                .Int("open_at_stop", OpenAtStop);
        }
    }
}
