// corobench: C++20 coroutines on standalone Asio (docs/protocol.md).
//
// chain:    asio::experimental::channel<strand, void(error_code, Event)> with
//           capacity Q per sender/receiver pair; sender and receiver are
//           awaitable<void> coroutines co_spawn'ed on the pair's strand of one
//           io_context that --threads worker threads run.
// tasks:    N coroutines co_spawn'ed on the io_context, each awaiting a
//           steady_timer of D ms, then adding 1 to an atomic counter.
// blocking: variant "sync" does open/read/write/close inside the coroutine (it
//           blocks its io_context thread); variant "pool" hands the same work to
//           an asio::thread_pool and co_awaits the result.
// echo:     a coroutine per connection (server.hpp), UUIDs from getrandom(2).
// http:     Boost.Beast on Boost.Asio, in http.cpp (its own translation unit).

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <asio.hpp>
#include <asio/experimental/channel.hpp>
#include <asio/experimental/concurrent_channel.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "corobench.hpp"

namespace net = asio;
using error_code = asio::error_code;
#include "server.hpp"

// Boost.Beast's http server (http.cpp).
void run_http(const corobench::Params& p);

namespace {

constexpr const char* kId = "cpp-asio";

using asio::awaitable;
using asio::use_awaitable;
using corobench::EType;
using corobench::Params;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------- runtime --

// An io_context run by `n` worker threads; the main thread only spawns and waits.
class Runtime {
 public:
  explicit Runtime(std::int64_t n) : ctx_(static_cast<int>(n)), guard_(asio::make_work_guard(ctx_)) {
    threads_.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      try {
        threads_.emplace_back([this] { ctx_.run(); });
      } catch (const std::system_error& e) {
        corobench::refused("started " + std::to_string(i) + " of " + std::to_string(n) +
                           " threads: " + std::strerror(e.code().value()));
      }
    }
  }
  ~Runtime() {
    guard_.reset();
    for (auto& t : threads_) t.join();
  }
  asio::io_context& ctx() { return ctx_; }

 private:
  asio::io_context ctx_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

// Completion handler for co_spawn: an exception escaping a coroutine ends the
// program (a lost task would otherwise leave the main thread waiting forever).
struct Fatal {
  void operator()(std::exception_ptr e) const {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      corobench::refused("memory: allocation failed (std::bad_alloc)");
    } catch (const std::system_error& x) {
      int v = x.code().value();
      if (v == EMFILE || v == ENFILE || v == ENOMEM || v == EAGAIN)
        corobench::refused(std::string("file descriptors/memory: ") + x.what());
      corobench::die(1, std::string("task failed: ") + x.what());
    } catch (const std::exception& x) {
      corobench::die(1, std::string("task failed: ") + x.what());
    }
    corobench::die(1, "task failed");
  }
};

// Counts finished tasks down; the main thread blocks until it reaches zero.
// A worker may still be inside count_down() (notify) when the main thread sees
// zero, so a latch must outlive the worker threads (chain keeps them in a
// Latches arena; blocking reuses one, declared before the runtime: a late
// notify only wakes the next wait, which checks the count again).
class Latch {
 public:
  explicit Latch(std::int64_t n) : left_(n) {}
  void reset(std::int64_t n) { left_.store(n, std::memory_order_relaxed); }
  void count_down() {
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) left_.notify_all();
  }
  void wait() {
    for (std::int64_t v = left_.load(std::memory_order_acquire); v != 0;
         v = left_.load(std::memory_order_acquire))
      left_.wait(v, std::memory_order_acquire);
  }

 private:
  std::atomic<std::int64_t> left_;
};
using Latches = std::deque<Latch>;

// ------------------------------------------------------------------ chain --

struct Int {
  std::int64_t value;
};
// str: the ordinary C++ way, a std::string passed by value (a copy; strings of
// up to 15 bytes live inside the object with libstdc++'s small-string buffer).
struct Str {
  std::string s;
};
// str_ptr: a plain pointer to one string that outlives the run (as Go's *string
// and Rust's &'static str): nothing is allocated or reference-counted per event.
struct StrPtr {
  const std::string* p;
};
// str_clone: a fresh heap buffer with a copy of the bytes for every event,
// whatever the length.
struct StrClone {
  std::unique_ptr<char[]> data;
  std::size_t len;
};
using Event = std::variant<Int, Str, StrPtr, StrClone>;

struct Weight {
  std::int64_t operator()(const Int& e) const { return e.value; }
  std::int64_t operator()(const Str& e) const { return static_cast<std::int64_t>(e.s.size()); }
  std::int64_t operator()(const StrPtr& e) const { return static_cast<std::int64_t>(e.p->size()); }
  std::int64_t operator()(const StrClone& e) const { return static_cast<std::int64_t>(e.len); }
};

#ifndef COROBENCH_CONCURRENT_CHANNEL
// Each sender/receiver pair runs on its own strand of the io_context and shares
// an asio::experimental::channel (no internal mutex: the strand serialises the
// pair, different pairs run in parallel on the worker threads).
using PairExecutor = asio::strand<asio::io_context::executor_type>;
using Channel = asio::experimental::channel<PairExecutor, void(asio::error_code, Event)>;
#else
// Measurement alternative (make CXXFLAGS=-DCOROBENCH_CONCURRENT_CHANNEL): the
// mutex-protected concurrent_channel, coroutines on the plain io_context.
using Channel = asio::experimental::concurrent_channel<void(asio::error_code, Event)>;
#endif

struct Shared {
  std::int64_t esize;
  std::string str;  // source of str / str_clone, and the string str_ptr points to
};

template <EType T>
Event make_event(const Shared& sh) {
  if constexpr (T == EType::int_) {
    return Int{sh.esize};
  } else if constexpr (T == EType::str) {
    return Str{sh.str};
  } else if constexpr (T == EType::str_ptr) {
    return StrPtr{&sh.str};
  } else {
    std::unique_ptr<char[]> buf(new char[sh.str.size()]);
    std::memcpy(buf.get(), sh.str.data(), sh.str.size());
    return StrClone{std::move(buf), sh.str.size()};
  }
}

// The try_ calls take the fast path when the buffer has room / an event; only
// when they cannot complete at once does the coroutine suspend in async_*.
template <EType T>
awaitable<void> sender(Channel& ch, const Shared& sh, std::int64_t events) {
  for (std::int64_t i = 0; i < events; ++i) {
    Event ev = make_event<T>(sh);
#ifndef COROBENCH_ASYNC_ONLY
    if (!ch.try_send(asio::error_code{}, std::move(ev)))
#endif
      co_await ch.async_send(asio::error_code{}, std::move(ev), use_awaitable);
  }
}

struct ChainResult {
  std::atomic<std::int64_t> checksum{0};
  std::atomic<std::int64_t> received{0};
};

awaitable<void> receiver(Channel& ch, std::int64_t events, ChainResult& res, Latch& done) {
  std::int64_t sum = 0;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < events; ++i) {
    Event ev;
#ifndef COROBENCH_ASYNC_ONLY
    if (!ch.try_receive([&ev](asio::error_code, Event e) { ev = std::move(e); }))
#endif
      ev = co_await ch.async_receive(use_awaitable);
    sum += std::visit(Weight{}, ev);
    ++n;
  }
  res.checksum.fetch_add(sum, std::memory_order_relaxed);
  res.received.fetch_add(n, std::memory_order_relaxed);
  done.count_down();
}

template <EType T, typename Ex>
void spawn_sender(Ex ex, Channel& ch, const Shared& sh, std::int64_t events) {
  asio::co_spawn(ex, sender<T>(ch, sh, events), Fatal{});
}

struct PassResult {
  std::int64_t checksum, received, elapsed_ns;
};

PassResult chain_pass(Runtime& rt, Latches& latches, const Params& p, const Shared& sh) {
  auto& ctx = rt.ctx();
  ChainResult res;
  Latch& done = latches.emplace_back(p.workers);
  std::vector<std::unique_ptr<Channel>> chans;
  chans.reserve(static_cast<std::size_t>(p.workers));

  std::int64_t t0 = now_ns();
  for (std::int64_t w = 0; w < p.workers; ++w) {
#ifndef COROBENCH_CONCURRENT_CHANNEL
    auto ex = asio::make_strand(ctx);
#else
    auto ex = ctx.get_executor();
#endif
    chans.push_back(std::make_unique<Channel>(ex, static_cast<std::size_t>(p.queue)));
    Channel& ch = *chans.back();
    asio::co_spawn(ex, receiver(ch, p.events, res, done), Fatal{});
    switch (p.etype) {
      case EType::int_: spawn_sender<EType::int_>(ex, ch, sh, p.events); break;
      case EType::str: spawn_sender<EType::str>(ex, ch, sh, p.events); break;
      case EType::str_ptr: spawn_sender<EType::str_ptr>(ex, ch, sh, p.events); break;
      case EType::str_clone: spawn_sender<EType::str_clone>(ex, ch, sh, p.events); break;
    }
  }
  done.wait();
  std::int64_t t1 = now_ns();
  return {res.checksum.load(), res.received.load(), t1 - t0};
}

void run_chain(const Params& p) {
  const Shared sh{p.esize, std::string(static_cast<std::size_t>(p.esize), 'x')};
  PassResult r{};
  Latches latches;
  {
    Runtime rt(p.threads);
    for (std::int64_t k = 0; k < p.warmup; ++k) {
      PassResult w = chain_pass(rt, latches, p, sh);
      if (w.checksum != p.workers * p.events * p.esize || w.received != p.workers * p.events) {
        corobench::die(1, "warm-up pass " + std::to_string(k) + ": wrong checksum " + std::to_string(w.checksum));
      }
    }
    r = chain_pass(rt, latches, p, sh);
  }
  corobench::Json()
      .add("scenario", "chain")
      .add("workers", p.workers)
      .add("events", p.events)
      .add("queue", p.queue)
      .add("etype", corobench::etype_name(p.etype))
      .add("esize", p.esize)
      .add("threads", p.threads)
      .add("warmup", p.warmup)
      .add("received", r.received)
      .add("checksum", r.checksum)
      .add("elapsed_ns", r.elapsed_ns)
      .print();
}

// ------------------------------------------------------------------ tasks --

awaitable<void> sleeper(std::chrono::milliseconds d, std::atomic<std::int64_t>& counter, Latch& done) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(use_awaitable);
  counter.fetch_add(1, std::memory_order_relaxed);
  done.count_down();
}

void run_tasks(const Params& p) {
  std::atomic<std::int64_t> counter{0};
  std::int64_t spawn_ns = 0, elapsed_ns = 0;
  Latch done(p.tasks);
  {
    Runtime rt(p.threads);
    auto& ctx = rt.ctx();
    const std::chrono::milliseconds d(p.sleep_ms);
    std::int64_t t0 = now_ns();
    std::int64_t i = 0;
    try {
      for (; i < p.tasks; ++i) asio::co_spawn(ctx, sleeper(d, counter, done), Fatal{});
    } catch (const std::bad_alloc&) {
      corobench::refused("spawned " + std::to_string(i) + " of " + std::to_string(p.tasks) +
                         " tasks: out of memory");
    }
    std::int64_t t1 = now_ns();
    done.wait();
    std::int64_t t2 = now_ns();
    spawn_ns = t1 - t0;
    elapsed_ns = t2 - t0;
  }
  corobench::Json()
      .add("scenario", "tasks")
      .add("tasks", p.tasks)
      .add("sleep_ms", p.sleep_ms)
      .add("threads", p.threads)
      .add("checksum", counter.load())
      .add("spawn_ns", spawn_ns)
      .add("elapsed_ns", elapsed_ns)
      .print();
}

// --------------------------------------------------------------- blocking --

[[noreturn]] void io_refused(const char* what, int err) {
  corobench::refused(std::string(what) + ": " + std::strerror(err));
}

// Opens /dev/urandom, reads exactly `bytes` into buf, opens /dev/null, writes
// them all, closes both.  Returns the bytes written.  Plain blocking POSIX calls.
std::int64_t copy_random(char* buf, std::int64_t bytes) {
  int in = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (in < 0) io_refused("open /dev/urandom", errno);
  std::int64_t got = 0;
  while (got < bytes) {
    ssize_t r = ::read(in, buf + got, static_cast<std::size_t>(bytes - got));
    if (r < 0) {
      if (errno == EINTR) continue;
      io_refused("read /dev/urandom", errno);
    }
    if (r == 0) io_refused("read /dev/urandom", EIO);
    got += r;
  }
  ::close(in);
  int out = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (out < 0) io_refused("open /dev/null", errno);
  std::int64_t put = 0;
  while (put < bytes) {
    ssize_t r = ::write(out, buf + put, static_cast<std::size_t>(bytes - put));
    if (r < 0) {
      if (errno == EINTR) continue;
      io_refused("write /dev/null", errno);
    }
    put += r;
  }
  ::close(out);
  return put;
}

// Runs `copy_random` on the pool and resumes the awaiting coroutine on its own
// executor with the result.
template <typename Token>
auto async_copy_on(asio::thread_pool& pool, char* buf, std::int64_t bytes, Token&& token) {
  return asio::async_initiate<Token, void(std::int64_t)>(
      [&pool, buf, bytes](auto handler) {
        auto ex = asio::get_associated_executor(handler);
        asio::post(pool, [buf, bytes, ex, h = std::move(handler)]() mutable {
          std::int64_t n = copy_random(buf, bytes);
          asio::dispatch(ex, [n, h = std::move(h)]() mutable { std::move(h)(n); });
        });
      },
      token);
}

awaitable<void> blocking_sync(char* buf, std::int64_t bytes, std::atomic<std::int64_t>& total, Latch& done) {
  total.fetch_add(copy_random(buf, bytes), std::memory_order_relaxed);
  done.count_down();
  co_return;
}

awaitable<void> blocking_pool(asio::thread_pool& pool, char* buf, std::int64_t bytes,
                              std::atomic<std::int64_t>& total, Latch& done) {
  std::int64_t n = co_await async_copy_on(pool, buf, bytes, use_awaitable);
  total.fetch_add(n, std::memory_order_relaxed);
  done.count_down();
}

// Asio's default thread_pool size (asio/impl/thread_pool.ipp,
// default_thread_pool_size): 2 x std::thread::hardware_concurrency(), or 2 when
// that is unknown. The pool variant keeps that default; this reports it.
std::int64_t asio_default_pool_size() {
  std::int64_t n = 2 * static_cast<std::int64_t>(std::thread::hardware_concurrency());
  return n == 0 ? 2 : n;
}

void run_blocking(const Params& p) {
  const bool pool_variant = p.variant == "pool";
  const std::int64_t pool_threads = pool_variant ? asio_default_pool_size() : 0;
  std::atomic<std::int64_t> total{0};
  std::int64_t elapsed_ns = 0;
  // One buffer per task slot, reused by every iteration (allocated before timing).
  std::vector<char> bufs(static_cast<std::size_t>(p.tasks * p.bytes));
  Latch done(0);
  {
    Runtime rt(p.threads);
    std::optional<asio::thread_pool> pool;
    if (pool_variant) {
      try {
        pool.emplace();  // asio's default size: 2 x hardware threads
      } catch (const std::system_error& e) {
        corobench::refused(std::string("starting the blocking thread pool: ") + e.what());
      }
    }
    auto& ctx = rt.ctx();
    auto iteration = [&] {
      done.reset(p.tasks);
      for (std::int64_t t = 0; t < p.tasks; ++t) {
        char* buf = bufs.data() + t * p.bytes;
        if (pool_variant)
          asio::co_spawn(ctx, blocking_pool(*pool, buf, p.bytes, total, done), Fatal{});
        else
          asio::co_spawn(ctx, blocking_sync(buf, p.bytes, total, done), Fatal{});
      }
      done.wait();
    };
    iteration();  // unmeasured warm-up
    total.store(0);
    std::int64_t t0 = now_ns();
    for (std::int64_t i = 0; i < p.iterations; ++i) iteration();
    elapsed_ns = now_ns() - t0;
    if (pool) pool->join();
  }
  corobench::Json()
      .add("scenario", "blocking")
      .add("tasks", p.tasks)
      .add("iterations", p.iterations)
      .add("bytes", p.bytes)
      .add("variant", p.variant)
      .add("threads", p.threads)
      .add("pool_threads", pool_threads)
      .add("checksum", total.load())
      .add("elapsed_ns", elapsed_ns)
      .print();
}

// ------------------------------------------------------------------- echo --

// A UUID v4 from 16 bytes of getrandom(2), one call per UUID: what the usual
// C++ UUID libraries do by default (Boost.Uuid's random_generator and
// util-linux's libuuid uuid_generate_random both call getrandom per UUID).
// Writes its 36-character lowercase hyphenated text to out.
void uuid_v4(char* out) {
  unsigned char b[16];
  std::size_t got = 0;
  while (got < sizeof b) {
    ssize_t r = ::getrandom(b + got, sizeof b - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      corobench::die(1, std::string("echo: getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(r);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *out++ = '-';
    *out++ = kHex[b[i] >> 4];
    *out++ = kHex[b[i] & 15];
  }
}

struct EchoStats {
  std::int64_t requests = 0, uuids = 0, bytes_in = 0, bytes_out = 0, partial = 0;
  void add(const EchoStats& o) {
    requests += o.requests;
    uuids += o.uuids;
    bytes_in += o.bytes_in;
    bytes_out += o.bytes_out;
    partial += o.partial;
  }
};

// One connection: read exactly S bytes, append U UUID lines, write the reply in
// one async_write, until the client closes or, per_connection > 0, until that
// many replies were written (the server then closes). One buffer per
// connection: the request is read into its head, the UUIDs are written after it.
struct EchoSession {
  std::size_t size, uuids;
  std::int64_t per_connection;
  awaitable<void> operator()(asio::ip::tcp::socket& sock, EchoStats& st) const {
    const std::size_t reply = size + 37 * uuids;
    std::unique_ptr<char[]> buf(new char[reply]);
    std::int64_t replies = 0;
    for (;;) {
      asio::error_code ec;
      // async_read keeps reading after short reads until S bytes arrived.
      std::size_t n =
          co_await asio::async_read(sock, asio::buffer(buf.get(), size), asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (n > 0) ++st.partial;  // EOF (or an error) inside a request
        break;
      }
      st.bytes_in += static_cast<std::int64_t>(size);
      for (std::size_t i = 0; i < uuids; ++i) {
        char* line = buf.get() + size + 37 * i;
        line[0] = '\n';
        uuid_v4(line + 1);
      }
      co_await asio::async_write(sock, asio::buffer(buf.get(), reply), asio::redirect_error(use_awaitable, ec));
      if (ec) break;
      ++st.requests;
      st.uuids += static_cast<std::int64_t>(uuids);
      st.bytes_out += static_cast<std::int64_t>(reply);
      if (++replies == per_connection) break;
    }
  }
};

void run_echo(const Params& p) {
  const EchoSession session{static_cast<std::size_t>(p.size), static_cast<std::size_t>(p.uuids), p.per_connection};
  server::run<EchoStats>(p, session, [&p](const EchoStats& t, std::int64_t connections, std::int64_t open_at_stop) {
    corobench::Json j;
    j.add("scenario", "echo").add("size", p.size).add("uuids", p.uuids).add("per_connection", p.per_connection);
    j.add("threads", p.threads);
    if (p.variant_given) j.add("variant", p.variant);
    j.add("connections", connections)
        .add("requests", t.requests)
        .add("uuids_generated", t.uuids)
        .add("bytes_in", t.bytes_in)
        .add("bytes_out", t.bytes_out)
        .add("partial", t.partial)
        .add("open_at_stop", open_at_stop)
        .print();
  });
}

const corobench::Variants kVariants = {{"blocking", {"sync", "pool"}}};

}  // namespace

int main(int argc, char** argv) {
  Params p = corobench::parse(argc, argv, kId, kVariants);
  try {
    switch (p.scenario) {
      case corobench::Scenario::chain: run_chain(p); break;
      case corobench::Scenario::tasks: run_tasks(p); break;
      case corobench::Scenario::blocking: run_blocking(p); break;
      case corobench::Scenario::echo: run_echo(p); break;
      case corobench::Scenario::http: run_http(p); break;
    }
  } catch (const std::bad_alloc&) {
    corobench::refused("memory: allocation failed (std::bad_alloc)");
  }
  return 0;
}
