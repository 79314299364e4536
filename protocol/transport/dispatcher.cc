#include "protocol/transport/dispatcher.h"

#include <spdlog/spdlog.h>

namespace gossipd::protocol {
namespace {

// Only bounds how long stop() waits; receive() returns as soon as data arrives.
constexpr std::chrono::milliseconds kPollInterval{50};

}  // namespace

Dispatcher::Dispatcher(Transport& transport, Validator& validator, Mailbox& mailbox,
                       std::string close_request)
    : transport_(transport),
      validator_(validator),
      mailbox_(mailbox),
      close_request_(std::move(close_request)) {
  thread_ = std::jthread([this](std::stop_token st) { loop(st); });
}

void Dispatcher::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void dispatch(Validator& validator, Mailbox& mailbox, RawMessage raw, Transport* transport) {
  auto msg = validator.validate(std::move(raw));
  if (!msg) return;
  if (msg->envelope.type() != proto::CLOSE_CONNECTION) {
    mailbox.push(std::move(*msg));
  } else if (transport) {
    transport->release(msg->envelope.sender());
  }
}

void Dispatcher::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    try {
      auto raw = transport_.receive(kPollInterval);
      if (raw) dispatch(validator_, mailbox_, std::move(*raw), &transport_);
      transport_.ask_to_close(close_request_);
    } catch (const std::exception& e) {
      // A broken receive must not take the node down silently.
      spdlog::error("node '{}': receive failed: {}", transport_.node_id(), e.what());
    }
  }
}

}  // namespace gossipd::protocol
