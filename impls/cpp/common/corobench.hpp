// corobench shared helper for C++ implementations: command-line parsing and
// validation (docs/protocol.md section 2), exit codes (section 3) and the
// one-line JSON result.  Header-only, C++20.
#pragma once

#include <arpa/inet.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace corobench {

// Prints one line on stderr and exits with `code`.  If several threads fail at
// once, only the first one prints; the others wait for the exit.
[[noreturn]] inline void die(int code, const std::string& msg) {
  static std::atomic_flag dying = ATOMIC_FLAG_INIT;
  if (dying.test_and_set()) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::fprintf(stderr, "%s\n", msg.c_str());
  std::fflush(stderr);
  std::_Exit(code);
}

// Exit 2: bad input.  One line on stderr, nothing on stdout.
[[noreturn]] inline void bad_input(const std::string& msg) { die(2, msg); }

// Exit 3: the machine refused a resource.  One line on stderr, nothing on stdout.
[[noreturn]] inline void refused(const std::string& msg) { die(3, msg); }

enum class Scenario { chain, tasks, blocking, echo, http };
enum class EType : int { int_ = 0, str = 1, str_ptr = 2, str_clone = 3 };

inline const char* etype_name(EType t) {
  switch (t) {
    case EType::int_: return "int";
    case EType::str: return "str";
    case EType::str_ptr: return "str_ptr";
    case EType::str_clone: return "str_clone";
  }
  return "?";
}

struct Params {
  Scenario scenario = Scenario::chain;
  const char* scenario_name = "chain";
  // chain
  std::int64_t workers = 1000, events = 10000, queue = 256, esize = 10, warmup = 0;
  EType etype = EType::int_;
  // tasks
  std::int64_t tasks = 10000, sleep_ms = 10000;
  // blocking (tasks is shared with the tasks scenario, default 1000 here)
  std::int64_t iterations = 1000, bytes = 10;
  std::string variant;
  bool variant_given = false;
  // servers (echo, http)
  std::string host = "127.0.0.1";
  std::int64_t port = 0, size = 17, uuids = 5;
  // echo: replies after which the server closes a connection; 0: until the client does
  std::int64_t per_connection = 0;
  bool allow_remote = false;
  // all
  std::int64_t threads = 0;  // 0 = not given -> default_threads()
  bool threads_given = false;
};

// The CPUs this process may run on (its affinity mask), as the protocol asks for
// the default thread count; hardware_concurrency() would count every CPU of the
// machine instead.
inline std::int64_t default_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<std::int64_t>(n);
}

// The variants of each scenario that has some (the first is the default).
using Variants = std::map<std::string, std::vector<std::string>>;

namespace detail {

enum class Kind { positive, non_negative, etype, variant, text, text_value, switch_ };

struct Flag {
  char short_name;       // 0 = none
  const char* long_name;  // without leading "--"
  Kind kind;
  bool seen = false;
};

inline std::int64_t parse_int(const std::string& flag, const std::string& v, bool allow_zero) {
  std::int64_t out = 0;
  const char* b = v.data();
  const char* e = v.data() + v.size();
  if (!v.empty() && v[0] == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  if (v.empty() || b == e || ec == std::errc::invalid_argument || p != e)
    bad_input(flag + " needs an integer, got '" + v + "'");
  if (ec == std::errc::result_out_of_range)
    bad_input(flag + " value '" + v + "' is out of range");
  if (out < 0 || (out == 0 && !allow_zero))
    bad_input(flag + (allow_zero ? " must not be negative" : " must be positive") + ", got " + v);
  return out;
}

inline bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t& out) {
  return __builtin_mul_overflow(a, b, &out);
}

}  // namespace detail

// Checks a server's --host: an IPv4 or IPv6 literal, and a loopback address
// (127.0.0.0/8 or ::1) unless --allow-remote was given.
inline void check_host(const std::string& scen, const std::string& host, bool allow_remote) {
  in_addr a4{};
  in6_addr a6{};
  bool loopback;
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    loopback = (ntohl(a4.s_addr) >> 24) == 127;
  } else if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) {
    loopback = IN6_IS_ADDR_LOOPBACK(&a6);
  } else {
    bad_input(scen + ": --host '" + host + "' is not an IP address literal");
  }
  if (!loopback && !allow_remote)
    bad_input(scen + ": --host " + host +
              " is not a loopback address (127.0.0.0/8 or ::1); add --allow-remote to bind it");
}

// Parses argv.  `id` is the manifest id (for the --cpuprofile message),
// `variants` the variants of each scenario that has some (the first is the default).
inline Params parse(int argc, char** argv, const char* id, const Variants& all_variants) {
  using detail::Flag;
  using detail::Kind;
  Params p;
  if (argc < 2) bad_input("missing scenario (chain, tasks, blocking, echo or http)");
  std::string scen = argv[1];
  static const std::vector<std::string> none;
  auto found = all_variants.find(scen);
  const std::vector<std::string>& variants = found == all_variants.end() ? none : found->second;
  std::vector<Flag> flags;
  if (scen == "chain") {
    p.scenario = Scenario::chain;
    p.scenario_name = "chain";
    flags = {{'w', "workers", Kind::positive}, {'e', "events", Kind::positive},
             {'q', "queue", Kind::positive},   {'t', "etype", Kind::etype},
             {'s', "esize", Kind::positive},   {0, "threads", Kind::positive},
             {0, "warmup", Kind::non_negative}, {0, "cpuprofile", Kind::text}};
  } else if (scen == "tasks") {
    p.scenario = Scenario::tasks;
    p.scenario_name = "tasks";
    flags = {{'n', "tasks", Kind::positive}, {'d', "sleep-ms", Kind::non_negative},
             {0, "threads", Kind::positive}};
  } else if (scen == "blocking") {
    p.scenario = Scenario::blocking;
    p.scenario_name = "blocking";
    p.tasks = 1000;
    p.variant = variants.empty() ? std::string() : variants.front();
    flags = {{'n', "tasks", Kind::positive}, {'i', "iterations", Kind::positive},
             {'b', "bytes", Kind::positive}, {0, "variant", Kind::variant},
             {0, "threads", Kind::positive}};
  } else if (scen == "echo" || scen == "http") {
    p.scenario = scen == "echo" ? Scenario::echo : Scenario::http;
    p.scenario_name = scen == "echo" ? "echo" : "http";
    p.variant = variants.empty() ? std::string() : variants.front();
    flags = {{0, "host", Kind::text_value},   {0, "port", Kind::non_negative},
             {0, "threads", Kind::positive},  {0, "variant", Kind::variant},
             {0, "allow-remote", Kind::switch_}};
    if (scen == "echo") {
      flags.push_back({0, "size", Kind::positive});
      flags.push_back({0, "uuids", Kind::non_negative});
      flags.push_back({0, "per-connection", Kind::non_negative});
    }
  } else {
    bad_input("unknown scenario '" + scen + "' (chain, tasks, blocking, echo or http)");
  }

  bool cpuprofile = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    Flag* f = nullptr;
    std::string value;
    bool has_value = false;
    if (arg.size() > 2 && arg[0] == '-' && arg[1] == '-') {
      std::string name = arg.substr(2);
      auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      for (auto& c : flags)
        if (name == c.long_name) f = &c;
    } else if (arg.size() == 2 && arg[0] == '-') {
      for (auto& c : flags)
        if (c.short_name != 0 && arg[1] == c.short_name) f = &c;
    }
    if (f == nullptr) {
      if (!arg.empty() && arg[0] == '-')
        bad_input("unknown flag '" + arg + "' for " + scen);
      bad_input("unexpected argument '" + arg + "'");
    }
    std::string display = std::string("--") + f->long_name;
    if (f->seen) bad_input("flag " + display + " given more than once");
    f->seen = true;
    if (f->kind == Kind::switch_) {
      if (has_value) bad_input("flag " + display + " takes no value");
      p.allow_remote = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) bad_input("flag " + arg + " needs a value");
      value = argv[++i];
    }
    std::string_view ln = f->long_name;
    switch (f->kind) {
      case Kind::positive:
      case Kind::non_negative: {
        std::int64_t v = detail::parse_int(display, value, f->kind == Kind::non_negative);
        if (ln == "workers") p.workers = v;
        else if (ln == "events") p.events = v;
        else if (ln == "queue") p.queue = v;
        else if (ln == "esize") p.esize = v;
        else if (ln == "warmup") p.warmup = v;
        else if (ln == "tasks") p.tasks = v;
        else if (ln == "sleep-ms") p.sleep_ms = v;
        else if (ln == "iterations") p.iterations = v;
        else if (ln == "bytes") p.bytes = v;
        else if (ln == "port") p.port = v;
        else if (ln == "size") p.size = v;
        else if (ln == "uuids") p.uuids = v;
        else if (ln == "per-connection") p.per_connection = v;
        else if (ln == "threads") { p.threads = v; p.threads_given = true; }
        break;
      }
      case Kind::etype:
        if (value == "0" || value == "int") p.etype = EType::int_;
        else if (value == "1" || value == "str") p.etype = EType::str;
        else if (value == "2" || value == "str_ptr") p.etype = EType::str_ptr;
        else if (value == "3" || value == "str_clone") p.etype = EType::str_clone;
        else bad_input("unknown etype '" + value + "' (0/int, 1/str, 2/str_ptr, 3/str_clone)");
        break;
      case Kind::variant: {
        bool ok = false;
        std::string list;
        for (auto& v : variants) {
          ok = ok || v == value;
          list += (list.empty() ? "" : ", ") + v;
        }
        if (!ok && variants.empty())
          bad_input(std::string("unknown variant '") + value + "' (" + id + " has no " + scen + " variants)");
        if (!ok) bad_input("unknown variant '" + value + "' (" + list + ")");
        p.variant = value;
        p.variant_given = true;
        break;
      }
      case Kind::text_value:
        if (value.empty()) bad_input("flag " + display + " needs a non-empty value");
        p.host = value;
        break;
      case Kind::text:
        cpuprofile = true;
        break;
      case Kind::switch_:
        break;
    }
  }
  if (cpuprofile) bad_input(std::string("--cpuprofile is not supported by ") + id);

  std::int64_t tmp = 0;
  if (p.scenario == Scenario::chain) {
    if (detail::mul_overflows(p.workers, p.events, tmp) || detail::mul_overflows(tmp, p.esize, tmp))
      bad_input("expected checksum workers*events*esize exceeds 2^63-1");
  } else if (p.scenario == Scenario::blocking) {
    if (detail::mul_overflows(p.tasks, p.iterations, tmp) || detail::mul_overflows(tmp, p.bytes, tmp))
      bad_input("expected checksum tasks*iterations*bytes exceeds 2^63-1");
  }
  if (p.scenario == Scenario::echo || p.scenario == Scenario::http) {
    check_host(scen, p.host, p.allow_remote);
    if (p.port > 65535) bad_input(scen + ": --port " + std::to_string(p.port) + " is outside 0 ... 65535");
    if (p.size > (1 << 20)) bad_input(scen + ": --size " + std::to_string(p.size) + " is outside 1 ... 1048576");
    if (p.uuids > 1000) bad_input(scen + ": --uuids " + std::to_string(p.uuids) + " is outside 0 ... 1000");
    if (p.per_connection > 1000000000)
      bad_input(scen + ": --per-connection " + std::to_string(p.per_connection) + " is outside 0 ... 1000000000");
  }
  if (!p.threads_given) p.threads = default_threads();
  return p;
}

// Builds the single JSON result line.
class Json {
 public:
  Json& add(const char* key, std::int64_t v) {
    sep(key);
    s_ += std::to_string(v);
    return *this;
  }
  Json& add(const char* key, const std::string& v) {
    sep(key);
    s_ += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') s_ += '\\';
      s_ += c;
    }
    s_ += '"';
    return *this;
  }
  Json& add(const char* key, const char* v) { return add(key, std::string(v)); }
  Json& add(const char* key, bool v) {
    sep(key);
    s_ += v ? "true" : "false";
    return *this;
  }
  void print() {
    s_ += "}\n";
    std::fwrite(s_.data(), 1, s_.size(), stdout);
    std::fflush(stdout);
  }

 private:
  void sep(const char* key) {
    s_ += s_.empty() ? "{\"" : ",\"";
    s_ += key;
    s_ += "\":";
  }
  std::string s_;
};

}  // namespace corobench
