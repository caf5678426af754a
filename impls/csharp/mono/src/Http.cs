// http: HTTP/1.1 with keep-alive over TcpListener, a task per connection. Mono's HttpListener
// was the first choice and is not used: it closes every keep-alive connection after its 100th
// request (Connection: close, "Keep-Alive: timeout=15,max=100"), drops a second request that
// arrives in the same read, and gives no way to set TCP_NODELAY (impls/csharp/README.md).
using System;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Corobench.Mono
{
    sealed class HttpServer : Server
    {
        /// <summary>A request head larger than this is a 400 (ours are under 100 bytes).</summary>
        const int MaxHead = 8192;
        const int MaxToken = 64;

        static readonly byte[] OkHead = Ascii("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ");
        static readonly byte[] CloseHeader = Ascii("Connection: close\r\n");
        static readonly byte[] KeepAliveHeader = Ascii("Connection: keep-alive\r\n");
        static readonly byte[] NotFoundHead = Ascii("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n");
        static readonly byte[] NotFoundBody = Ascii("not found\n");
        static readonly byte[] BadRequest = Ascii(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\nbad request\n");
        static readonly byte[] Crlf = Ascii("\r\n");

        long requests, notFound, badRequests;

        public HttpServer(ServerParams p, int threads) : base(p, threads) { }

        static byte[] Ascii(string s) { return Encoding.ASCII.GetBytes(s); }

        protected override async Task Serve()
        {
            while (true)
            {
                var c = await AcceptAsync();
                if (c == null)
                    return;
                Opened(c);
                _ = ServeConnection(c);
            }
        }

        /// <summary>What one request asks for, once its head parsed.</summary>
        struct Request
        {
            public bool Ok;          // the request line and headers parse
            public bool Ping;        // GET /ping/<token>
            public int TokenStart, TokenLength;
            public bool KeepAlive;
            public bool Http10;
            public long BodyLength;  // Content-Length of a request body to skip
        }

        async Task ServeConnection(TcpClient c)
        {
            long ok = 0, missing = 0, bad = 0;
            try
            {
                c.NoDelay = true;
                var stream = c.GetStream();
                var buf = new byte[MaxHead];
                var output = new byte[256 + MaxToken];
                int start = 0, end = 0, scanned = 0;
                while (true)
                {
                    // Blank lines before a request line are ignored (RFC 9112, 2.2).
                    while (end - start >= 2 && buf[start] == '\r' && buf[start + 1] == '\n')
                    {
                        start += 2;
                        scanned = start;
                    }
                    int headEnd = IndexOfHeadEnd(buf, Math.Max(start, scanned - 3), end);
                    if (headEnd < 0)
                    {
                        scanned = end;
                        if (end == buf.Length)
                        {
                            if (start == 0)
                            {
                                bad++;
                                await stream.WriteAsync(BadRequest, 0, BadRequest.Length); // head too large
                                return;
                            }
                            Buffer.BlockCopy(buf, start, buf, 0, end - start);
                            end -= start;
                            scanned -= start;
                            start = 0;
                        }
                        int n = await ReadOrEof(stream, buf, end, buf.Length - end);
                        if (n == 0)
                            return; // EOF (between requests, or inside one: nothing to answer)
                        end += n;
                        continue;
                    }

                    var req = Parse(buf, start, headEnd);
                    start = headEnd + 4;
                    scanned = start;
                    if (!req.Ok)
                    {
                        bad++;
                        await stream.WriteAsync(BadRequest, 0, BadRequest.Length);
                        return;
                    }
                    // A body is not expected; skip it so the next request parses.
                    long skip = req.BodyLength;
                    while (skip > 0)
                    {
                        if (start == end)
                        {
                            start = end = scanned = 0;
                            int n = await ReadOrEof(stream, buf, 0, buf.Length);
                            if (n == 0)
                                return;
                            end = n;
                        }
                        int take = (int)Math.Min(skip, end - start);
                        start += take;
                        skip -= take;
                        scanned = start;
                    }

                    int len;
                    if (req.Ping)
                    {
                        len = Ok(output, buf, req);
                        ok++;
                    }
                    else
                    {
                        len = NotFound(output, req);
                        missing++;
                    }
                    // The token is copied into the response before the buffer is reused.
                    if (start == end)
                        start = end = scanned = 0;
                    await stream.WriteAsync(output, 0, len);
                    if (!req.KeepAlive)
                        return;
                }
            }
            catch (Exception)
            {
                // reset by the client or closed by the stop: the connection ends
            }
            finally
            {
                c.Close();
                Interlocked.Add(ref requests, ok);
                Interlocked.Add(ref notFound, missing);
                Interlocked.Add(ref badRequests, bad);
                Closed(c);
            }
        }

        static async Task<int> ReadOrEof(NetworkStream stream, byte[] buf, int at, int count)
        {
            try
            {
                return await stream.ReadAsync(buf, at, count);
            }
            catch (Exception)
            {
                return 0;
            }
        }

        /// <summary>The index of "\r\n\r\n" in buf[from, end), or -1.</summary>
        static int IndexOfHeadEnd(byte[] buf, int from, int end)
        {
            for (int i = from; i + 3 < end; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
                    return i;
            return -1;
        }

        /// <summary>Parses the head in buf[start, headEnd) (headEnd is where "\r\n\r\n" starts).</summary>
        static Request Parse(byte[] buf, int start, int headEnd)
        {
            var req = new Request();
            int lineEnd = IndexOfCrlf(buf, start, headEnd + 2);
            // request-line = method SP request-target SP HTTP-version
            int sp1 = IndexOf(buf, (byte)' ', start, lineEnd);
            if (sp1 <= start)
                return req;
            int sp2 = IndexOf(buf, (byte)' ', sp1 + 1, lineEnd);
            if (sp2 <= sp1 + 1 || IndexOf(buf, (byte)' ', sp2 + 1, lineEnd) >= 0)
                return req;
            for (int i = start; i < sp1; i++)
                if (!IsTchar(buf[i]))
                    return req;
            for (int i = sp1 + 1; i < sp2; i++)
                if (buf[i] <= 0x20 || buf[i] >= 0x7f)
                    return req;
            if (lineEnd - (sp2 + 1) != 8 || !StartsWith(buf, sp2 + 1, "HTTP/1.") || (buf[sp2 + 8] != '1' && buf[sp2 + 8] != '0'))
                return req;
            req.Http10 = buf[sp2 + 8] == '0';
            bool close = false, keepAlive = false;

            // header-field = field-name ":" OWS field-value OWS
            for (int line = lineEnd + 2; line < headEnd + 2;)
            {
                int end = IndexOfCrlf(buf, line, headEnd + 2);
                int colon = IndexOf(buf, (byte)':', line, end);
                if (colon <= line)
                    return req; // no name (or an obsolete folded line)
                for (int i = line; i < colon; i++)
                    if (!IsTchar(buf[i]))
                        return req;
                int v = colon + 1, ve = end;
                for (int i = v; i < ve; i++)
                    if ((buf[i] < 0x20 && buf[i] != '\t') || buf[i] == 0x7f)
                        return req;
                while (v < ve && (buf[v] == ' ' || buf[v] == '\t'))
                    v++;
                while (ve > v && (buf[ve - 1] == ' ' || buf[ve - 1] == '\t'))
                    ve--;
                if (NameIs(buf, line, colon, "connection"))
                {
                    close |= HasToken(buf, v, ve, "close");
                    keepAlive |= HasToken(buf, v, ve, "keep-alive");
                }
                else if (NameIs(buf, line, colon, "content-length"))
                {
                    long n = 0;
                    if (ve == v || ve - v > 18)
                        return req;
                    for (int i = v; i < ve; i++)
                    {
                        if (buf[i] < '0' || buf[i] > '9')
                            return req;
                        n = n * 10 + (buf[i] - '0');
                    }
                    req.BodyLength = n;
                }
                else if (NameIs(buf, line, colon, "transfer-encoding"))
                    return req; // request bodies in chunks are not accepted by this server
                line = end + 2;
            }
            req.Ok = true;
            req.KeepAlive = req.Http10 ? keepAlive && !close : !close;

            // GET /ping/<token>, token = 1 ... 64 of [A-Za-z0-9_-]
            const string prefix = "/ping/";
            int tokenStart = sp1 + 1 + prefix.Length;
            int tokenLength = sp2 - tokenStart;
            if (sp1 - start == 3 && StartsWith(buf, start, "GET") && StartsWith(buf, sp1 + 1, prefix)
                && tokenLength >= 1 && tokenLength <= MaxToken)
            {
                req.Ping = true;
                for (int i = tokenStart; i < sp2; i++)
                {
                    byte b = buf[i];
                    if (!((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '_' || b == '-'))
                        req.Ping = false;
                }
                req.TokenStart = tokenStart;
                req.TokenLength = tokenLength;
            }
            return req;
        }

        /// <summary>The 200 response with the token as its body, built in the connection's buffer.</summary>
        static int Ok(byte[] output, byte[] buf, Request req)
        {
            int at = Put(output, 0, OkHead);
            int len = req.TokenLength;
            if (len >= 10)
                output[at++] = (byte)('0' + len / 10);
            output[at++] = (byte)('0' + len % 10);
            at = Put(output, at, Crlf);
            at = ConnectionHeader(output, at, req);
            at = Put(output, at, Crlf);
            Buffer.BlockCopy(buf, req.TokenStart, output, at, len);
            return at + len;
        }

        static int NotFound(byte[] output, Request req)
        {
            int at = Put(output, 0, NotFoundHead);
            at = ConnectionHeader(output, at, req);
            at = Put(output, at, Crlf);
            return Put(output, at, NotFoundBody);
        }

        static int ConnectionHeader(byte[] output, int at, Request req)
        {
            if (!req.KeepAlive)
                return Put(output, at, CloseHeader);
            if (req.Http10)
                return Put(output, at, KeepAliveHeader);
            return at;
        }

        static int Put(byte[] output, int at, byte[] bytes)
        {
            Buffer.BlockCopy(bytes, 0, output, at, bytes.Length);
            return at + bytes.Length;
        }

        static int IndexOfCrlf(byte[] buf, int from, int end)
        {
            for (int i = from; i + 1 < end; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n')
                    return i;
            return end;
        }

        static int IndexOf(byte[] buf, byte b, int from, int end)
        {
            for (int i = from; i < end; i++)
                if (buf[i] == b)
                    return i;
            return -1;
        }

        static bool StartsWith(byte[] buf, int at, string s)
        {
            if (at + s.Length > buf.Length)
                return false;
            for (int i = 0; i < s.Length; i++)
                if (buf[at + i] != s[i])
                    return false;
            return true;
        }

        /// <summary>Case-insensitive comparison of a header name with a lowercase name.</summary>
        static bool NameIs(byte[] buf, int from, int end, string lower)
        {
            if (end - from != lower.Length)
                return false;
            for (int i = 0; i < lower.Length; i++)
                if ((buf[from + i] | 0x20) != lower[i])
                    return false;
            return true;
        }

        /// <summary>Whether a comma-separated header value holds the token (case-insensitive).</summary>
        static bool HasToken(byte[] buf, int from, int end, string lower)
        {
            int i = from;
            while (i < end)
            {
                while (i < end && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == ','))
                    i++;
                int s = i;
                while (i < end && buf[i] != ',')
                    i++;
                int e = i;
                while (e > s && (buf[e - 1] == ' ' || buf[e - 1] == '\t'))
                    e--;
                if (NameIs(buf, s, e, lower))
                    return true;
            }
            return false;
        }

        /// <summary>RFC 9110 token characters.</summary>
        static bool IsTchar(byte b)
        {
            if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9'))
                return true;
            return "!#$%&'*+-.^_`|~".IndexOf((char)b) >= 0;
        }

        protected override Json Final()
        {
            return Begin().Int("requests", Interlocked.Read(ref requests)).Int("connections", Interlocked.Read(ref Connections))
                .Int("not_found", Interlocked.Read(ref notFound)).Int("bad_requests", Interlocked.Read(ref badRequests))
                .Int("open_at_stop", OpenAtStop);
        }
    }
}
