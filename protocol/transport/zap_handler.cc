#include "protocol/transport/zap_handler.h"

#include <spdlog/spdlog.h>
#include <zmq.h>

#include <array>
#include <vector>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr std::chrono::milliseconds kStopPoll{100};

}  // namespace

ZapHandler::ZapHandler(zmq::context_t& context, const std::vector<std::string>& allowed_keys)
    : socket_(context, zmq::socket_type::rep) {
  for (const auto& k : allowed_keys) {
    std::array<uint8_t, 32> raw{};
    if (k.size() != 40 || zmq_z85_decode(raw.data(), k.c_str()) == nullptr) {
      throw ProtocolConfigError("ZAP: allowed key is not a 40-character Z85 key");
    }
    allowed_.insert(std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
  }
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind(kZapEndpoint);
  thread_ = std::thread([this] { serve(); });
}

ZapHandler::~ZapHandler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  socket_.close();
}

bool ZapHandler::admits(const zmq::message_t& mechanism, const zmq::message_t& credentials) const {
  return mechanism.to_string_view() == "CURVE" && credentials.size() == 32 &&
         allowed_.count(std::string(static_cast<const char*>(credentials.data()), credentials.size())) > 0;
}

void ZapHandler::serve() {
  while (!stop_) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, kStopPoll) == 0) continue;
    // Request: version, request id, domain, address, identity, mechanism, credentials...
    std::vector<zmq::message_t> req;
    bool more = true;
    while (more) {
      zmq::message_t part;
      if (!socket_.recv(part, zmq::recv_flags::dontwait)) break;
      more = part.more();
      req.push_back(std::move(part));
    }
    // REP must answer every request, even a malformed one (it is refused).
    const bool ok = req.size() >= 7 && admits(req[5], req[6]);
    if (!ok) {
      ++refused_;
      spdlog::warn("ZAP: refused a {} client from {}", req.size() > 5 ? req[5].to_string() : "?",
                   req.size() > 3 ? req[3].to_string() : "?");
    }
    const std::array<std::string, 6> reply{"1.0",
                                           req.size() > 1 ? req[1].to_string() : "",
                                           ok ? "200" : "400",
                                           ok ? "OK" : "key not in cluster",
                                           "",
                                           ""};
    for (size_t i = 0; i < reply.size(); ++i) {
      socket_.send(zmq::buffer(reply[i]),
                   i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  }
}

}  // namespace gossipd::protocol
