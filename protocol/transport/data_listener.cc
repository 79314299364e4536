#include "protocol/transport/data_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "protocol/wire/data_wire.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

DataListener::DataListener(std::string node_id, const std::string& host, Validator& validator,
                           DataSocketTuning tuning, std::chrono::milliseconds hello_timeout)
    : node_id_(std::move(node_id)),
      validator_(validator),
      tuning_(std::move(tuning)),
      hello_timeout_(hello_timeout),
      rng_(std::random_device{}()) {
  listen_ = listen_tcp(host, &port_);
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) throw ProtocolConfigError("data path: pipe failed");
  wake_[0] = Fd(p[0]);
  wake_[1] = Fd(p[1]);
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

DataListener::~DataListener() {
  thread_.request_stop();
  const char c = 0;
  [[maybe_unused]] const auto n = ::write(wake_[1].get(), &c, 1);
  if (thread_.joinable()) thread_.join();
}

uint64_t DataListener::expect(const std::string& peer) {
  std::lock_guard lock(mu_);
  uint64_t nonce = 0;
  while (nonce == 0 || expected_.count(nonce)) nonce = rng_();
  expected_.emplace(nonce, Expected{peer, Fd()});
  return nonce;
}

Fd DataListener::take(uint64_t nonce) {
  std::lock_guard lock(mu_);
  const auto it = expected_.find(nonce);
  if (it == expected_.end() || !it->second.fd) return Fd();
  Fd fd = std::move(it->second.fd);
  expected_.erase(it);
  return fd;
}

void DataListener::forget(uint64_t nonce) {
  std::lock_guard lock(mu_);
  expected_.erase(nonce);
}

uint64_t DataListener::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

void DataListener::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::vector<pollfd> fds{{wake_[0].get(), POLLIN, 0}, {listen_.get(), POLLIN, 0}};
    for (const auto& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) accept_all();
    const auto now = Clock::now();
    std::erase_if(pending_, [&](Pending& p) {
      if (now > p.deadline) {
        refuse(p, RejectReason::kTruncated, "(unknown)", "no complete data-path hello in time");
        return true;
      }
      return !read_hello(p);
    });
  }
}

void DataListener::accept_all() {
  for (;;) {
    Fd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!fd) return;
    Pending p{std::move(fd), {}, Clock::now() + hello_timeout_};
    // Full: the oldest goes (a flood of silent connections must not keep a
    // member's new connection waiting for the hello timeout).
    if (pending_.size() >= kMaxPending) {
      refuse(pending_.front(), RejectReason::kQueueFull, "(unknown)",
             "evicted: too many data-path connections owe their hello");
      pending_.erase(pending_.begin());
    }
    pending_.push_back(std::move(p));
  }
}

bool DataListener::read_hello(Pending& p) {
  std::byte buf[wire::kHelloFixedBytes + 2 * wire::kMaxHelloString];
  for (;;) {
    size_t want = wire::kHelloFixedBytes;
    if (p.hello.size() >= wire::kHelloFixedBytes) {
      const auto total = wire::hello_length(
          std::span<const std::byte, wire::kHelloFixedBytes>(p.hello.data(), wire::kHelloFixedBytes));
      if (!total) {
        refuse(p, RejectReason::kBadEnvelope, "(unknown)", "not a data-path hello");
        return false;
      }
      want = *total;
    }
    if (p.hello.size() == want && want > wire::kHelloFixedBytes) {
      conclude(p);
      return false;
    }
    // Never more than the hello: the connector sends nothing else before the ack.
    const ssize_t n = ::recv(p.fd.get(), buf, want - p.hello.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n <= 0) {
      refuse(p, RejectReason::kTruncated, "(unknown)", "connection closed before its data-path hello");
      return false;
    }
    p.hello.insert(p.hello.end(), buf, buf + n);
  }
}

void DataListener::conclude(Pending& p) {
  const auto hello = wire::decode_hello(p.hello);
  if (!hello) return refuse(p, RejectReason::kBadEnvelope, "(unknown)", "malformed data-path hello");
  const auto& opts = validator_.options();
  if (hello->version != opts.version)
    return refuse(p, RejectReason::kVersion, hello->sender, "version " + std::to_string(hello->version));
  if (hello->cluster_id != opts.cluster_id)
    return refuse(p, RejectReason::kCluster, hello->sender, "cluster '" + hello->cluster_id + "'");
  if (!validator_.is_member(hello->sender))
    return refuse(p, RejectReason::kUnknownSender, hello->sender, "data-path connection from a non-member");
  std::unique_lock lock(mu_);
  const auto it = expected_.find(hello->nonce);
  if (it == expected_.end() || it->second.peer != hello->sender || it->second.fd) {
    lock.unlock();
    return refuse(p, RejectReason::kUnexpected, hello->sender,
                  "data-path hello with a nonce not announced to it");
  }
  tune_data_socket(p.fd.get(), tuning_);
  const std::byte ack = wire::kAck;
  if (::send(p.fd.get(), &ack, 1, MSG_NOSIGNAL) != 1) return;  // gone already; the claim times out
  it->second.fd = std::move(p.fd);
}

void DataListener::refuse(Pending& p, RejectReason reason, const std::string& who,
                          const std::string& detail) {
  validator_.log().reject(who, reason, detail);
  p.fd.reset();
  std::lock_guard lock(mu_);
  ++refused_;
}

}  // namespace gossipd::protocol
