#include "daemon/observe/http_server.h"

#include <spdlog/spdlog.h>

#include <asio.hpp>
#include <stdexcept>

#include "daemon/config/cli.h"

namespace gossipd::daemon {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr auto kRequestTimeout = std::chrono::seconds(5);

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Internal Server Error";
  }
}

// One connection: read the request head, answer, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(asio::ip::tcp::socket socket, const HttpHandler& handler)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        handler_(handler),
        buffer_(kMaxRequestBytes) {}

  void start() {
    auto self = shared_from_this();
    timer_.expires_after(kRequestTimeout);
    timer_.async_wait([self](const asio::error_code& ec) {
      if (!ec) self->socket_.close();
    });
    asio::async_read_until(socket_, buffer_, "\r\n\r\n",
                           [self](const asio::error_code& ec, size_t) { self->on_read(ec); });
  }

 private:
  void on_read(const asio::error_code& ec) {
    if (ec) {  // closed, timed out or too large: nothing to answer
      asio::error_code ignored;
      socket_.close(ignored);
      timer_.cancel();
      return;
    }
    std::istream in(&buffer_);
    std::string method, target, version;
    in >> method >> target >> version;
    HttpResponse resp;
    if (method.empty() || target.empty() || version.rfind("HTTP/", 0) != 0) {
      resp = {400, "text/plain; charset=utf-8", "malformed request line\n"};
    } else if (method != "GET") {
      resp = {405, "text/plain; charset=utf-8", "only GET is served\n"};
    } else {
      const std::string path = target.substr(0, target.find('?'));
      try {
        resp = handler_(path);
      } catch (const std::exception& e) {
        resp = {500, "text/plain; charset=utf-8", std::string(e.what()) + "\n"};
      }
    }
    out_ = "HTTP/1.1 " + std::to_string(resp.status) + " " + reason(resp.status) +
           "\r\nContent-Type: " + resp.content_type +
           "\r\nContent-Length: " + std::to_string(resp.body.size()) + "\r\nConnection: close\r\n\r\n" +
           resp.body;
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_), [self](const asio::error_code&, size_t) {
      asio::error_code ignored;
      self->socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
      self->socket_.close(ignored);
      self->timer_.cancel();
    });
  }

  asio::ip::tcp::socket socket_;
  asio::steady_timer timer_;
  const HttpHandler& handler_;
  asio::streambuf buffer_;
  std::string out_;
};

}  // namespace

std::pair<std::string, uint16_t> split_host_port(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    throw std::invalid_argument("address '" + address + "' is not IP:PORT (e.g. 127.0.0.1:8080)");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port_text = address.substr(colon + 1);
  size_t used = 0;
  unsigned long port = 0;
  try {
    port = std::stoul(port_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != port_text.size() || port > 65535) {
    throw std::invalid_argument("port '" + port_text + "' in '" + address + "' is not a number in 0..65535");
  }
  asio::error_code ec;
  asio::ip::make_address(host, ec);
  if (ec) throw std::invalid_argument("'" + host + "' in '" + address + "' is not an IP address");
  return {host, static_cast<uint16_t>(port)};
}

struct HttpServer::Impl {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io};
  HttpHandler handler;
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), handler)->start();
      accept();
    });
  }
};

HttpServer::HttpServer(const std::string& address, HttpHandler handler) : impl_(std::make_unique<Impl>()) {
  auto [host, port] = split_host_port(address);
  impl_->handler = std::move(handler);
  asio::ip::tcp::endpoint ep(asio::ip::make_address(host), port);
  asio::error_code ec;
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw DaemonError("cannot serve HTTP on " + address + ": " + ec.message());
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace gossipd::daemon
