// Package protocol implements the parts of the corobench implementation protocol
// (docs/protocol.md) shared by every Go runtime: flag parsing and validation, the
// checksum range check, exit codes and the one-line JSON result.
package protocol

import (
	"fmt"
	"math"
	"math/bits"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// MaxPerConnection is the largest echo --per-connection (docs/protocol.md).
const MaxPerConnection = 1_000_000_000

// Exit codes defined by the protocol.
const (
	ExitFailure  = 1 // anything unexpected (wrong checksum, unexpected I/O error)
	ExitBadInput = 2 // bad command line
	ExitRefused  = 3 // the machine refused a resource
)

// Prog is the name used as the prefix of error lines.
var Prog = "corobench-go"

func die(code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	// Exactly one line on stderr.
	msg = strings.ReplaceAll(msg, "\n", " ")
	fmt.Fprintf(os.Stderr, "%s: %s\n", Prog, msg)
	os.Exit(code)
}

// BadInput prints one line on stderr and exits with code 2.
func BadInput(format string, args ...any) { die(ExitBadInput, format, args...) }

// Refused prints one line on stderr and exits with code 3.
func Refused(format string, args ...any) { die(ExitRefused, format, args...) }

// Fail prints one line on stderr and exits with code 1.
func Fail(format string, args ...any) { die(ExitFailure, format, args...) }

// Event types of the chain scenario, in protocol order (their number is the index).
var ETypes = []string{"int", "str", "str_ptr", "str_clone"}

// Chain holds the chain scenario's parameters.
type Chain struct {
	Workers, Events, Queue int64
	EType                  int // index into ETypes
	ESize                  int64
	Threads                int64 // 0: runtime default
	Warmup                 int64
	CPUProfile             string // "" when off
}

// Tasks holds the tasks scenario's parameters.
type Tasks struct {
	Tasks, SleepMs, Threads int64
}

// Blocking holds the blocking scenario's parameters.
type Blocking struct {
	Tasks, Iterations, Bytes, Threads int64
	Variant                           string // "" when not given
}

type kind int

const (
	positive   kind = iota // integer >= 1
	nonNeg                 // integer >= 0
	text                   // any string
	switchFlag             // no value: present or not (strp is set to "1")
)

type flagDef struct {
	short, long string // short may be ""
	kind        kind
	intp        *int64
	strp        *string
}

// Server holds the parameters of the server scenarios (echo and http).
type Server struct {
	Scenario    string
	Host        string // the IP literal as given
	Addr        netip.Addr
	Port        int64
	Size, UUIDs int64 // echo only
	// PerConnection (echo): replies after which the server closes the
	// connection; 0: serve until the client closes it.
	PerConnection int64
	Threads       int64 // 0: runtime default
	Variant       string
	AllowRemote   bool
}

func (d *flagDef) name() string {
	if d.short != "" {
		return d.short + "/--" + d.long
	}
	return "--" + d.long
}

// parseInt accepts an optional '-' followed by decimal digits only.
func parseInt(s string) (int64, error) {
	body := strings.TrimPrefix(s, "-")
	if body == "" || strings.TrimLeft(body, "0123456789") != "" {
		return 0, fmt.Errorf("not an integer")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("out of range")
	}
	return v, nil
}

// parse applies args (everything after the scenario) to defs, enforcing the
// protocol's rules: short and long forms, --long=V, any order, each flag once.
func parse(scenario string, args []string, defs []flagDef) {
	seen := make(map[*flagDef]bool, len(defs))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		var def *flagDef
		var value string
		hasValue := false
		switch {
		case strings.HasPrefix(arg, "--") && len(arg) > 2:
			name := arg[2:]
			if eq := strings.IndexByte(name, '='); eq >= 0 {
				name, value, hasValue = name[:eq], name[eq+1:], true
			}
			for j := range defs {
				if defs[j].long == name {
					def = &defs[j]
				}
			}
		case strings.HasPrefix(arg, "-") && len(arg) == 2:
			for j := range defs {
				if defs[j].short == arg {
					def = &defs[j]
				}
			}
		default:
			BadInput("%s: unexpected argument %q", scenario, arg)
		}
		if def == nil {
			BadInput("%s: unknown flag %q", scenario, arg)
		}
		if seen[def] {
			BadInput("%s: flag %s given more than once", scenario, def.name())
		}
		seen[def] = true
		if def.kind == switchFlag {
			if hasValue {
				BadInput("%s: flag %s takes no value", scenario, def.name())
			}
			*def.strp = "1"
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				BadInput("%s: flag %s needs a value", scenario, def.name())
			}
			i++
			value = args[i]
		}
		if def.kind == text {
			if value == "" {
				BadInput("%s: flag %s needs a non-empty value", scenario, def.name())
			}
			*def.strp = value
			continue
		}
		v, err := parseInt(value)
		if err != nil {
			BadInput("%s: invalid value %q for %s: %v", scenario, value, def.name(), err)
		}
		if def.kind == positive && v <= 0 {
			BadInput("%s: %s must be a positive integer, got %d", scenario, def.name(), v)
		}
		if def.kind == nonNeg && v < 0 {
			BadInput("%s: %s must not be negative, got %d", scenario, def.name(), v)
		}
		*def.intp = v
	}
}

// product returns a*b*c, or ok=false when it exceeds 2^63-1 (all are >= 0).
func product(a, b, c int64) (int64, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	hi, lo = bits.Mul64(lo, uint64(c))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// ParseChain parses the chain scenario's flags (args excludes the scenario).
func ParseChain(args []string) Chain {
	c := Chain{Workers: 1000, Events: 10000, Queue: 256, ESize: 10}
	etype := "int"
	parse("chain", args, []flagDef{
		{"-w", "workers", positive, &c.Workers, nil},
		{"-e", "events", positive, &c.Events, nil},
		{"-q", "queue", positive, &c.Queue, nil},
		{"-t", "etype", text, nil, &etype},
		{"-s", "esize", positive, &c.ESize, nil},
		{"", "threads", positive, &c.Threads, nil},
		{"", "warmup", nonNeg, &c.Warmup, nil},
		{"", "cpuprofile", text, nil, &c.CPUProfile},
	})
	c.EType = -1
	for i, name := range ETypes {
		if etype == name || etype == strconv.Itoa(i) {
			c.EType = i
		}
	}
	if c.EType < 0 {
		BadInput("chain: unknown event type %q (expected 0/int, 1/str, 2/str_ptr, 3/str_clone)", etype)
	}
	if _, ok := c.Expected(); !ok {
		BadInput("chain: expected checksum workers*events*esize = %d*%d*%d exceeds 2^63-1",
			c.Workers, c.Events, c.ESize)
	}
	return c
}

// Expected returns the chain's expected checksum W*E*S and whether it fits in int64.
func (c Chain) Expected() (int64, bool) { return product(c.Workers, c.Events, c.ESize) }

// ParseTasks parses the tasks scenario's flags.
func ParseTasks(args []string) Tasks {
	t := Tasks{Tasks: 10000, SleepMs: 10000}
	parse("tasks", args, []flagDef{
		{"-n", "tasks", positive, &t.Tasks, nil},
		{"-d", "sleep-ms", nonNeg, &t.SleepMs, nil},
		{"", "threads", positive, &t.Threads, nil},
	})
	if t.SleepMs > math.MaxInt64/1_000_000 {
		BadInput("tasks: --sleep-ms %d is too large", t.SleepMs)
	}
	return t
}

// ParseBlocking parses the blocking scenario's flags.
func ParseBlocking(args []string) Blocking {
	b := Blocking{Tasks: 1000, Iterations: 1000, Bytes: 10}
	parse("blocking", args, []flagDef{
		{"-n", "tasks", positive, &b.Tasks, nil},
		{"-i", "iterations", positive, &b.Iterations, nil},
		{"-b", "bytes", positive, &b.Bytes, nil},
		{"", "variant", text, nil, &b.Variant},
		{"", "threads", positive, &b.Threads, nil},
	})
	if _, ok := b.Expected(); !ok {
		BadInput("blocking: expected checksum tasks*iterations*bytes = %d*%d*%d exceeds 2^63-1",
			b.Tasks, b.Iterations, b.Bytes)
	}
	return b
}

// Expected returns T*I*B and whether it fits in int64.
func (b Blocking) Expected() (int64, bool) { return product(b.Tasks, b.Iterations, b.Bytes) }

// ParseServer parses the flags of a server scenario ("echo" or "http"). variants are
// the scenario's variants (the first is the default); an empty list refuses --variant.
func ParseServer(scenario string, args []string, variants []string) Server {
	s := Server{Scenario: scenario, Host: "127.0.0.1", Size: 17, UUIDs: 5}
	var allowRemote string
	defs := []flagDef{
		{"", "host", text, nil, &s.Host},
		{"", "port", nonNeg, &s.Port, nil},
		{"", "threads", positive, &s.Threads, nil},
		{"", "variant", text, nil, &s.Variant},
		{"", "allow-remote", switchFlag, nil, &allowRemote},
	}
	if scenario == "echo" {
		defs = append(defs,
			flagDef{"", "size", positive, &s.Size, nil},
			flagDef{"", "uuids", nonNeg, &s.UUIDs, nil},
			flagDef{"", "per-connection", nonNeg, &s.PerConnection, nil})
	}
	parse(scenario, args, defs)
	s.AllowRemote = allowRemote != ""
	addr, err := netip.ParseAddr(s.Host)
	if err != nil {
		BadInput("%s: --host %q is not an IP address literal", scenario, s.Host)
	}
	s.Addr = addr
	if !s.AllowRemote && !IsLoopback(addr) {
		BadInput("%s: --host %s is not a loopback address (127.0.0.0/8 or ::1); add --allow-remote to bind it", scenario, s.Host)
	}
	if s.Port > 65535 {
		BadInput("%s: --port %d is outside 0 ... 65535", scenario, s.Port)
	}
	if s.Size > 1<<20 {
		BadInput("%s: --size %d is outside 1 ... 1048576", scenario, s.Size)
	}
	if s.UUIDs > 1000 {
		BadInput("%s: --uuids %d is outside 0 ... 1000", scenario, s.UUIDs)
	}
	if s.PerConnection > MaxPerConnection {
		BadInput("%s: --per-connection %d is outside 0 ... %d", scenario, s.PerConnection, int64(MaxPerConnection))
	}
	if s.Variant != "" {
		known := false
		for _, v := range variants {
			known = known || v == s.Variant
		}
		if !known {
			if len(variants) == 0 {
				BadInput("%s: unknown variant %q (go declares no %s variants)", scenario, s.Variant, scenario)
			}
			BadInput("%s: unknown variant %q (expected one of %s)", scenario, s.Variant, strings.Join(variants, ", "))
		}
	}
	return s
}

// VariantOr returns the variant given, or def when none was.
func (s Server) VariantOr(def string) string {
	if s.Variant == "" {
		return def
	}
	return s.Variant
}

// IsLoopback reports whether a is in 127.0.0.0/8 or is ::1 (the protocol's loopback
// set; an IPv4-mapped IPv6 address is not in it).
func IsLoopback(a netip.Addr) bool {
	if a.Is4() {
		return a.As4()[0] == 127
	}
	return a.WithZone("") == netip.IPv6Loopback()
}

// Result builds the one JSON object printed on success, keeping key order.
type Result struct{ buf []byte }

// NewResult starts an object with the "scenario" key.
func NewResult(scenario string) *Result {
	r := &Result{buf: make([]byte, 0, 256)}
	r.buf = append(r.buf, '{')
	return r.Str("scenario", scenario)
}

func (r *Result) key(k string) {
	if len(r.buf) > 1 {
		r.buf = append(r.buf, ',')
	}
	r.buf = strconv.AppendQuote(r.buf, k)
	r.buf = append(r.buf, ':')
}

// Int adds an integer field.
func (r *Result) Int(k string, v int64) *Result {
	r.key(k)
	r.buf = strconv.AppendInt(r.buf, v, 10)
	return r
}

// Bool adds a boolean field.
func (r *Result) Bool(k string, v bool) *Result {
	r.key(k)
	r.buf = strconv.AppendBool(r.buf, v)
	return r
}

// Str adds a string field (our values are plain ASCII identifiers).
func (r *Result) Str(k, v string) *Result {
	r.key(k)
	r.buf = strconv.AppendQuote(r.buf, v)
	return r
}

// Print writes the object as the single line on stdout.
func (r *Result) Print() {
	r.buf = append(r.buf, '}', '\n')
	if _, err := os.Stdout.Write(r.buf); err != nil {
		Fail("writing result: %v", err)
	}
}
