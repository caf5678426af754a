// The parts of the corobench protocol (docs/protocol.md) that every C# runtime shares: the
// command line (flags, validation), the exit codes 2/3 with one line on stderr, and the one-line
// JSON result. Written for Mono's mcs (C# 7.x without local functions or switch type patterns).
using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace Corobench
{
    /// <summary>Bad command line: exit 2, one line on stderr, nothing on stdout.</summary>
    public sealed class BadInput : Exception
    {
        public BadInput(string message) : base(message) { }
    }

    /// <summary>The machine refused a resource: exit 3, one line saying how far the program got.</summary>
    public sealed class Refused : Exception
    {
        public Refused(string message) : base(message) { }
    }

    public enum EType { Int = 0, Str = 1, StrPtr = 2, StrClone = 3 }

    public sealed class ChainParams
    {
        public int Workers;
        public long Events;
        public int Queue;
        public EType EType;
        public long ESize;
        public int Warmup;
        /// <summary>W x E x S, validated to fit in a long.</summary>
        public long Expected { get { return Workers * Events * ESize; } }
    }

    public sealed class TasksParams
    {
        public int Tasks;
        public int SleepMs;
    }

    public sealed class BlockingParams
    {
        public int Tasks;
        public long Iterations;
        public int Bytes;
        public string Variant;      // always set: the first listed when not given
        public bool VariantGiven;   // echoed in the output only when given
    }

    public sealed class ServerParams
    {
        public string Scenario;     // "echo" or "http"
        public IPAddress Host;
        public string HostText;     // as given (echoed in the ready line)
        public int Port;
        public int Size;            // echo only
        public int Uuids;           // echo only
        public int PerConnection;   // echo only: replies after which the server closes a connection; 0: until the client does
        public string Variant;
        public bool VariantGiven;
    }

    /// <summary>What a runtime supports beyond the common flags.</summary>
    public sealed class Spec
    {
        public string Id;
        public bool ThreadsFlag;    // false: --threads is refused (the manifest says threads = "none")
        public string[] BlockingVariants = new string[0];
        public string[] EchoVariants = new string[0];
        public string[] HttpVariants = new string[0];
    }

    public static class Cli
    {
        public const int ExitFailure = 1, ExitBadInput = 2, ExitRefused = 3;

        sealed class Flag
        {
            public readonly string Short, Long;
            public readonly bool TakesValue;
            public Flag(string s, string l, bool takesValue = true) { Short = s; Long = l; TakesValue = takesValue; }
        }

        static readonly Flag[] ChainFlags = {
            new Flag("w", "workers"), new Flag("e", "events"), new Flag("q", "queue"), new Flag("t", "etype"),
            new Flag("s", "esize"), new Flag(null, "threads"), new Flag(null, "warmup"), new Flag(null, "cpuprofile"),
        };
        static readonly Flag[] TasksFlags = {
            new Flag("n", "tasks"), new Flag("d", "sleep-ms"), new Flag(null, "threads"),
        };
        static readonly Flag[] BlockingFlags = {
            new Flag("n", "tasks"), new Flag("i", "iterations"), new Flag("b", "bytes"), new Flag(null, "variant"),
            new Flag(null, "threads"),
        };
        static readonly Flag[] EchoFlags = {
            new Flag(null, "host"), new Flag(null, "port"), new Flag(null, "size"), new Flag(null, "uuids"),
            new Flag(null, "per-connection"), new Flag(null, "threads"), new Flag(null, "variant"),
            new Flag(null, "allow-remote", false),
        };
        static readonly Flag[] HttpFlags = {
            new Flag(null, "host"), new Flag(null, "port"), new Flag(null, "threads"), new Flag(null, "variant"),
            new Flag(null, "allow-remote", false),
        };

        public static readonly string[] ETypeNames = { "int", "str", "str_ptr", "str_clone" };

        /// <summary>Parses argv[0] (the scenario) and its flags; throws BadInput.</summary>
        public static object Parse(Spec spec, string[] argv)
        {
            if (argv.Length == 0)
                throw new BadInput("missing scenario (expected chain, tasks, blocking, echo or http)");
            string scenario = argv[0];
            Flag[] flags;
            switch (scenario)
            {
                case "chain": flags = ChainFlags; break;
                case "tasks": flags = TasksFlags; break;
                case "blocking": flags = BlockingFlags; break;
                case "echo": flags = EchoFlags; break;
                case "http": flags = HttpFlags; break;
                default:
                    throw new BadInput("unknown scenario '" + scenario + "' (expected chain, tasks, blocking, echo or http)");
            }
            var values = ParseFlags(scenario, flags, argv);

            if (values.ContainsKey("cpuprofile"))
                throw new BadInput("--cpuprofile is not supported by " + spec.Id);
            if (values.ContainsKey("threads"))
            {
                if (!spec.ThreadsFlag)
                    throw new BadInput("--threads is not supported by " + spec.Id
                        + " (Mono's thread pool sizes itself; see impls/csharp/README.md)");
                Number(values, "threads", 0, 1, int.MaxValue);
            }

            switch (scenario)
            {
                case "chain":
                {
                    long w = Number(values, "workers", 1000, 1, int.MaxValue);
                    long e = Number(values, "events", 10000, 1, long.MaxValue);
                    long q = Number(values, "queue", 256, 1, int.MaxValue);
                    long s = Number(values, "esize", 10, 1, long.MaxValue);
                    EType t = EType.Int;
                    string raw;
                    if (values.TryGetValue("etype", out raw))
                        t = ParseEType(raw);
                    CheckProduct("workers*events*esize", w, e, s);
                    // A .NET string holds at most int.MaxValue chars, and this one is built in one array.
                    if (t != EType.Int && s > int.MaxValue)
                        throw new BadInput("--esize " + s + " is too long for a string (at most " + int.MaxValue + ")");
                    long warmup = Number(values, "warmup", 0, 0, int.MaxValue);
                    return new ChainParams { Workers = (int)w, Events = e, Queue = (int)q, EType = t, ESize = s, Warmup = (int)warmup };
                }
                case "tasks":
                {
                    long n = Number(values, "tasks", 10000, 1, int.MaxValue);
                    // Task.Delay takes an int of milliseconds.
                    long d = Number(values, "sleep-ms", 10000, 0, int.MaxValue);
                    return new TasksParams { Tasks = (int)n, SleepMs = (int)d };
                }
                case "blocking":
                {
                    long n = Number(values, "tasks", 1000, 1, int.MaxValue);
                    long i = Number(values, "iterations", 1000, 1, long.MaxValue);
                    long b = Number(values, "bytes", 10, 1, int.MaxValue);
                    CheckProduct("tasks*iterations*bytes", n, i, b);
                    var p = new BlockingParams { Tasks = (int)n, Iterations = i, Bytes = (int)b };
                    p.Variant = Variant(spec, "blocking", spec.BlockingVariants, values, out p.VariantGiven);
                    return p;
                }
                default:
                    return ParseServer(spec, scenario, values);
            }
        }

        static ServerParams ParseServer(Spec spec, string scenario, Dictionary<string, string> values)
        {
            var p = new ServerParams { Scenario = scenario };
            string host;
            if (!values.TryGetValue("host", out host))
                host = "127.0.0.1";
            p.Host = ParseIp(host);
            p.HostText = host;
            if (!values.ContainsKey("allow-remote") && !IsLoopback(p.Host))
                throw new BadInput("--host " + host + " is not a loopback address (127.0.0.0/8 or ::1); "
                    + "add --allow-remote to bind it");
            p.Port = (int)Number(values, "port", 0, 0, 65535);
            if (scenario == "echo")
            {
                p.Size = (int)Number(values, "size", 17, 1, 1048576);
                p.Uuids = (int)Number(values, "uuids", 5, 0, 1000);
                p.PerConnection = (int)Number(values, "per-connection", 0, 0, 1000000000);
            }
            p.Variant = Variant(spec, scenario, scenario == "echo" ? spec.EchoVariants : spec.HttpVariants, values,
                out p.VariantGiven);
            return p;
        }

        /// <summary>An IP literal only: dotted-quad IPv4 (four decimal parts) or IPv6; no names.</summary>
        static IPAddress ParseIp(string host)
        {
            IPAddress addr;
            bool ok;
            if (host.IndexOf(':') >= 0)
                ok = IPAddress.TryParse(host, out addr) && addr.AddressFamily == AddressFamily.InterNetworkV6;
            else
            {
                // IPAddress.TryParse also takes "127.1" and "2130706433"; the protocol means the usual form.
                string[] parts = host.Split('.');
                ok = parts.Length == 4;
                foreach (string part in parts)
                {
                    int v;
                    if (part.Length == 0 || part.Length > 3 || !IsDigits(part) || !int.TryParse(part, out v) || v > 255)
                        ok = false;
                }
                addr = ok ? IPAddress.Parse(host) : null;
            }
            if (!ok)
                throw new BadInput("--host " + host + " is not an IP address literal");
            return addr;
        }

        static bool IsLoopback(IPAddress a)
        {
            if (a.AddressFamily == AddressFamily.InterNetwork)
                return a.GetAddressBytes()[0] == 127;
            return a.Equals(IPAddress.IPv6Loopback);
        }

        static string Variant(Spec spec, string scenario, string[] known, Dictionary<string, string> values, out bool given)
        {
            string v;
            given = values.TryGetValue("variant", out v);
            if (!given)
                return known.Length > 0 ? known[0] : null;
            if (Array.IndexOf(known, v) < 0)
                throw new BadInput("unknown variant '" + v + "' for " + spec.Id + " " + scenario
                    + (known.Length > 0 ? " (expected one of " + string.Join(", ", known) + ")" : " (it has none)"));
            return v;
        }

        static Dictionary<string, string> ParseFlags(string scenario, Flag[] flags, string[] argv)
        {
            var values = new Dictionary<string, string>();
            for (int i = 1; i < argv.Length; i++)
            {
                string arg = argv[i];
                Flag flag = null;
                string value = null;
                if (arg.StartsWith("--", StringComparison.Ordinal) && arg.Length > 2)
                {
                    string name = arg.Substring(2);
                    int eq = name.IndexOf('=');
                    if (eq >= 0)
                    {
                        value = name.Substring(eq + 1);
                        name = name.Substring(0, eq);
                    }
                    foreach (var f in flags)
                        if (f.Long == name)
                            flag = f;
                }
                else if (arg.Length == 2 && arg[0] == '-')
                {
                    foreach (var f in flags)
                        if (f.Short != null && f.Short[0] == arg[1])
                            flag = f;
                }
                if (flag == null)
                    throw new BadInput("unknown flag '" + arg + "' for scenario " + scenario);
                if (!flag.TakesValue)
                {
                    if (value != null)
                        throw new BadInput("flag --" + flag.Long + " takes no value");
                    value = "";
                }
                else if (value == null)
                {
                    if (i + 1 >= argv.Length)
                        throw new BadInput("flag " + arg + " needs a value");
                    value = argv[++i];
                }
                if (values.ContainsKey(flag.Long))
                    throw new BadInput("flag --" + flag.Long + " given more than once");
                if (flag.TakesValue && value.Length == 0)
                    throw new BadInput("flag --" + flag.Long + " needs a non-empty value");
                values[flag.Long] = value;
            }
            return values;
        }

        static EType ParseEType(string raw)
        {
            for (int i = 0; i < ETypeNames.Length; i++)
                if (raw == ETypeNames[i] || raw == i.ToString(CultureInfo.InvariantCulture))
                    return (EType)i;
            throw new BadInput("unknown event type '" + raw + "' (expected 0/int, 1/str, 2/str_ptr, 3/str_clone)");
        }

        static bool IsDigits(string s)
        {
            foreach (char c in s)
                if (c < '0' || c > '9')
                    return false;
            return true;
        }

        /// <summary>A plain decimal integer (optional '-', digits only) within [min, max].</summary>
        static long Number(Dictionary<string, string> values, string name, long dflt, long min, long max)
        {
            string raw;
            if (!values.TryGetValue(name, out raw))
                return dflt;
            string digits = raw.StartsWith("-", StringComparison.Ordinal) ? raw.Substring(1) : raw;
            if (digits.Length == 0 || !IsDigits(digits))
                throw new BadInput("--" + name + " needs an integer, got '" + raw + "'");
            long v;
            if (!long.TryParse(raw, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out v))
                throw new BadInput("--" + name + " " + raw + " is out of range (at most " + max + ")");
            if (v < min)
                throw new BadInput("--" + name + " must be " + (min == 0 ? "zero or positive" : "at least " + min) + ", got " + raw);
            if (v > max)
                throw new BadInput("--" + name + " " + raw + " is out of range (at most " + max + ")");
            return v;
        }

        static long CheckProduct(string what, long a, long b, long c)
        {
            try
            {
                return checked(a * b * c);
            }
            catch (OverflowException)
            {
                throw new BadInput("expected checksum " + what + " = " + a + "*" + b + "*" + c + " exceeds 2^63-1");
            }
        }

        /// <summary>
        /// Parses, runs and reports: the body returns the output line (null when it printed its own
        /// lines, as servers do). Exit 0, 2 on bad input, 3 when a resource was refused, 1 otherwise.
        /// </summary>
        public static int Run(Spec spec, string[] argv, Func<object, Json> body)
        {
            object p;
            try
            {
                p = Parse(spec, argv);
            }
            catch (BadInput e)
            {
                return Die(ExitBadInput, spec.Id + ": " + e.Message);
            }
            AppDomain.CurrentDomain.UnhandledException += (sender, e) => Exit(spec, e.ExceptionObject as Exception);
            try
            {
                Json line = body(p);
                if (line != null)
                    PrintLine(line.ToString());
                return 0;
            }
            catch (Exception e)
            {
                Exit(spec, e);
                return ExitFailure;
            }
        }

        /// <summary>Writes one line on stdout and flushes it.</summary>
        public static void PrintLine(string line)
        {
            var stdout = Console.Out;
            stdout.Write(line + "\n");
            stdout.Flush();
        }

        /// <summary>Maps an exception to the protocol's exit code and one stderr line; never returns.</summary>
        public static void Exit(Spec spec, Exception e)
        {
            e = Unwrap(e);
            if (e is Refused)
                Die(ExitRefused, spec.Id + ": " + e.Message);
            else if (e is OutOfMemoryException)
                Die(ExitRefused, spec.Id + ": memory refused: " + e.Message);
            else if (e is BadInput)
                Die(ExitBadInput, spec.Id + ": " + e.Message);
            Die(ExitFailure, spec.Id + ": " + (e == null ? "unknown failure" : e.GetType().Name + ": " + e.Message));
        }

        /// <summary>The first real cause inside AggregateException wrappers (from Task.Wait/Result).</summary>
        public static Exception Unwrap(Exception e)
        {
            while (e is AggregateException && e.InnerException != null)
                e = e.InnerException;
            return e;
        }

        /// <summary>One line on stderr, then exit: immediately, without waiting for pool threads.</summary>
        public static int Die(int code, string message)
        {
            var err = Console.Error;
            err.Write(message.Replace('\n', ' ').Replace('\r', ' ') + "\n");
            err.Flush();
            Environment.Exit(code);
            return code;
        }
    }

    /// <summary>The one JSON object of a result line, keys in insertion order.</summary>
    public sealed class Json
    {
        readonly StringBuilder sb = new StringBuilder("{", 256);

        public Json(string scenario) { Str("scenario", scenario); }

        /// <summary>An object that starts with other keys (the servers' ready line).</summary>
        public Json() { }

        Json Key(string k)
        {
            if (sb.Length > 1)
                sb.Append(',');
            Quote(k);
            sb.Append(':');
            return this;
        }

        void Quote(string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                if (c == '"' || c == '\\')
                    sb.Append('\\').Append(c);
                else if (c < 0x20)
                    sb.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                else
                    sb.Append(c);
            }
            sb.Append('"');
        }

        public Json Int(string k, long v)
        {
            Key(k).sb.Append(v.ToString(CultureInfo.InvariantCulture));
            return this;
        }

        public Json Str(string k, string v)
        {
            Key(k).Quote(v);
            return this;
        }

        public Json Bool(string k, bool v)
        {
            Key(k).sb.Append(v ? "true" : "false");
            return this;
        }

        public Json Null(string k)
        {
            Key(k).sb.Append("null");
            return this;
        }

        public override string ToString() { return sb.ToString() + "}"; }
    }
}
