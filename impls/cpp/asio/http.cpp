// corobench http server: Boost.Beast on Boost.Asio (Debian's Boost 1.74),
// one C++20 coroutine per connection on an io_context run by --threads
// threads (server.hpp). A translation unit of its own: Beast needs Boost.Asio,
// the other scenarios use standalone Asio, and the two are never mixed in one
// file.

// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string_view>

#include "corobench.hpp"

namespace net = boost::asio;
using error_code = boost::system::error_code;
#include "server.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;

struct HttpStats {
  std::int64_t requests = 0, not_found = 0, bad_requests = 0;
  void add(const HttpStats& o) {
    requests += o.requests;
    not_found += o.not_found;
    bad_requests += o.bad_requests;
  }
};

// The token of GET /ping/<token>: 1 to 64 characters of [A-Za-z0-9_-]; empty
// when the target is anything else.
std::string_view ping_token(std::string_view target) {
  constexpr std::string_view prefix = "/ping/";
  if (target.substr(0, prefix.size()) != prefix) return {};
  std::string_view t = target.substr(prefix.size());
  if (t.empty() || t.size() > 64) return {};
  for (char c : t) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return {};
  }
  return t;
}

bool is_parse_error(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// One keep-alive connection: a fresh request_parser per request (a Beast parser
// parses one message); the flat_buffer keeps whatever arrived after the
// request, so a second request in the same read is parsed next.
struct HttpSession {
  net::awaitable<void> operator()(net::ip::tcp::socket& sock, HttpStats& st) const {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      error_code ec;
      co_await http::async_read(sock, buffer, parser, net::redirect_error(net::use_awaitable, ec));
      if (ec) {
        if (is_parse_error(ec)) {
          // Malformed request line or headers: 400, then close.
          http::response<http::string_body> res{http::status::bad_request, 11};
          res.set(http::field::content_type, "text/plain");
          res.keep_alive(false);
          res.body() = "bad request";
          res.prepare_payload();
          co_await http::async_write(sock, res, net::redirect_error(net::use_awaitable, ec));
          ++st.bad_requests;
          sock.shutdown(net::ip::tcp::socket::shutdown_send, ec);
        }
        break;  // the client closed (end_of_stream), or the connection failed
      }
      const auto& req = parser.get();
      const std::string_view target(req.target().data(), req.target().size());
      const std::string_view token = req.method() == http::verb::get ? ping_token(target) : std::string_view{};
      http::response<http::string_body> res{token.empty() ? http::status::not_found : http::status::ok,
                                            req.version()};
      res.set(http::field::content_type, "text/plain");
      res.keep_alive(req.keep_alive());
      if (token.empty())
        res.body() = "not found";
      else
        res.body().assign(token.data(), token.size());
      res.prepare_payload();  // Content-Length
      co_await http::async_write(sock, res, net::redirect_error(net::use_awaitable, ec));
      if (ec) break;
      if (token.empty())
        ++st.not_found;
      else
        ++st.requests;
      if (!res.keep_alive()) {  // Connection: close (or HTTP/1.0 without keep-alive)
        sock.shutdown(net::ip::tcp::socket::shutdown_send, ec);
        break;
      }
    }
  }
};

}  // namespace

void run_http(const corobench::Params& p) {
  server::run<HttpStats>(p, HttpSession{}, [&p](const HttpStats& t, std::int64_t connections,
                                                std::int64_t open_at_stop) {
    corobench::Json j;
    j.add("scenario", "http").add("threads", p.threads);
    if (p.variant_given) j.add("variant", p.variant);
    j.add("requests", t.requests)
        .add("connections", connections)
        .add("not_found", t.not_found)
        .add("bad_requests", t.bad_requests)
        .add("open_at_stop", open_at_stop)
        .print();
  });
}
