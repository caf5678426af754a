// corobench server skeleton for the C++ servers (docs/protocol.md, "Servers"):
// bind and listen, the ready line, an accept loop that co_spawns one coroutine
// per connection, SIGTERM, the 2 s stop wait and the per-connection counts.
//
// Written once for both Asio flavours. Include it after
//   namespace net = asio;          (standalone Asio: echo)
// or
//   namespace net = boost::asio;   (Boost.Asio, which Beast needs: http)
// and define `using error_code = ...` for that flavour. Everything is in an
// unnamed namespace, so the two translation units that include it with
// different `net`s share no symbol.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <list>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "corobench.hpp"

namespace {
namespace server {

// How long a stopping server waits for open connections to end before it
// closes them itself.
constexpr std::chrono::seconds kStopWait{2};

// One open connection: its socket (so the server can close it at stop) and its
// counts, which only the connection's coroutine writes.
template <class Stats>
struct Conn {
  explicit Conn(net::ip::tcp::socket s) : sock(std::move(s)) {}
  net::ip::tcp::socket sock;
  Stats stats{};
};

// The open connections and the totals of the ended ones. The mutex is taken
// twice per connection (accept and end), never per request.
template <class Stats>
class Registry {
 public:
  using Handle = typename std::list<Conn<Stats>>::iterator;

  Handle open(net::ip::tcp::socket sock) {
    std::lock_guard lock(m_);
    ++connections_;
    return open_.emplace(open_.end(), std::move(sock));
  }

  // Adds the connection's counts to the totals and forgets it (its socket is
  // closed already).
  void close(Handle h) {
    std::lock_guard lock(m_);
    total_.add(h->stats);
    open_.erase(h);
    if (open_.empty()) empty_.notify_all();
  }

  // Waits until no connection is open, at most `d`; false on timeout.
  bool wait_empty_for(std::chrono::milliseconds d) {
    std::unique_lock lock(m_);
    return empty_.wait_for(lock, d, [this] { return open_.empty(); });
  }

  std::int64_t connections() {
    std::lock_guard lock(m_);
    return connections_;
  }

  // Closes every open socket; only while no thread runs the io_context.
  std::int64_t close_all() {
    std::lock_guard lock(m_);
    for (auto& c : open_) {
      error_code ec;
      c.sock.close(ec);
    }
    return static_cast<std::int64_t>(open_.size());
  }

  // The totals, including connections still open.
  Stats total() {
    std::lock_guard lock(m_);
    Stats t = total_;
    for (auto& c : open_) t.add(c.stats);
    return t;
  }

 private:
  std::mutex m_;
  std::condition_variable empty_;
  std::list<Conn<Stats>> open_;
  Stats total_{};
  std::int64_t connections_ = 0;
};

// Completion of a co_spawn'ed coroutine: an exception escaping it ends the
// program (running out of memory is exit 3).
struct Failed {
  const char* scenario;
  void operator()(std::exception_ptr e) const {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      corobench::refused(std::string(scenario) + ": out of memory while serving");
    } catch (const std::exception& x) {
      corobench::die(1, std::string(scenario) + ": " + x.what());
    }
    corobench::die(1, std::string(scenario) + ": a connection failed");
  }
};

// One connection: TCP_NODELAY, the scenario's session until the client
// closes, then its counts go into the totals.
template <class Stats, class Session>
net::awaitable<void> connection(Registry<Stats>& reg, typename Registry<Stats>::Handle h, const Session& session) {
  error_code ec;
  h->sock.set_option(net::ip::tcp::no_delay(true), ec);
  co_await session(h->sock, h->stats);
  h->sock.close(ec);
  reg.close(h);
}

// Accepts until the acceptor is closed; each connection gets its own coroutine
// on the io_context (any worker thread), with a socket of the io_context.
template <class Stats, class Session>
net::awaitable<void> accept_loop(net::ip::tcp::acceptor& acc, net::io_context& ctx, Registry<Stats>& reg,
                                 const Session& session, const char* scenario) {
  for (;;) {
    error_code ec;
    net::ip::tcp::socket sock = co_await acc.async_accept(ctx, net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acc.is_open()) co_return;  // stopping
      int v = ec.value();
      std::string msg = std::string(scenario) + ": accepted " + std::to_string(reg.connections()) +
                        " connections, then accept failed: " + ec.message();
      if (v == EMFILE || v == ENFILE || v == ENOBUFS || v == ENOMEM) corobench::refused(msg);
      corobench::die(1, msg);
    }
    auto h = reg.open(std::move(sock));
    net::co_spawn(ctx, connection(reg, h, session), Failed{scenario});
  }
}

// Runs a server until SIGTERM/SIGINT: `session(socket&, Stats&)` is the
// scenario's coroutine for one connection; `print_final(total, connections,
// open_at_stop)` prints the final line.
template <class Stats, class Session, class Final>
void run(const corobench::Params& p, const Session& session, const Final& print_final) {
  const char* scen = p.scenario_name;
  net::io_context ctx(static_cast<int>(p.threads));
  // The acceptor and the signal set share a strand: the signal handler closes
  // the acceptor, which the accept loop uses from another thread otherwise.
  auto strand = net::make_strand(ctx);
  net::ip::tcp::acceptor acc(strand);
  // Before the ready line, so that a SIGTERM right after it is handled.
  net::signal_set signals(strand, SIGTERM, SIGINT);

  error_code ec;
  const net::ip::tcp::endpoint ep(net::ip::make_address(p.host, ec), static_cast<unsigned short>(p.port));
  if (!ec) acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    corobench::refused(std::string(scen) + ": cannot listen on " + p.host + " port " + std::to_string(p.port) +
                       ": " + ec.message());
  }
  const auto port = static_cast<std::int64_t>(acc.local_endpoint().port());  // before other threads use acc
  Registry<Stats> reg;  // after ctx: its sockets go before the io_context does
  std::atomic<bool> stopping{false};
  signals.async_wait([&](const error_code& e, int) {
    if (e) return;
    error_code ignored;
    acc.close(ignored);
    stopping.store(true);
    stopping.notify_all();
  });
  net::co_spawn(strand, accept_loop(acc, ctx, reg, session, scen), Failed{scen});

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(p.threads));
  for (std::int64_t i = 0; i < p.threads; ++i) {
    try {
      threads.emplace_back([&ctx] { ctx.run(); });
    } catch (const std::system_error& e) {
      corobench::refused(std::string(scen) + ": started " + std::to_string(i) + " of " + std::to_string(p.threads) +
                         " threads: " + std::strerror(e.code().value()));
    }
  }
  // Ready once the listener is listening and every worker thread runs (a thread
  // that cannot be started is exit 3 with nothing on stdout).
  corobench::Json ready;
  ready.add("ready", true).add("scenario", scen).add("host", p.host).add("port", port);
  if (p.scenario == corobench::Scenario::echo)
    ready.add("size", p.size).add("uuids", p.uuids).add("per_connection", p.per_connection);
  ready.add("threads", p.threads);
  if (p.variant_given) ready.add("variant", p.variant);
  ready.print();

  stopping.wait(false);
  const bool all_ended = reg.wait_empty_for(kStopWait);
  ctx.stop();
  for (auto& t : threads) t.join();
  std::int64_t open_at_stop = 0;
  if (!all_ended) {
    // No thread runs the io_context now: close what is left, then let those
    // coroutines see their operations aborted and add their counts.
    open_at_stop = reg.close_all();
    ctx.restart();
    ctx.run_for(std::chrono::seconds(1));
  }
  print_final(reg.total(), reg.connections(), open_at_stop);
}

}  // namespace server
}  // namespace
