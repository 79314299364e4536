#pragma once
// What the message fuzz targets share: a Node named "self" on the
// in-process transport (nothing leaves the process), its members m1 and m2,
// and the fuzz input read as messages from m1, m2 or the stranger "x" and
// passed through the validator as the receive thread would.

#include <spdlog/spdlog.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "protocol/transport/node.h"
#include "tests/fuzz/fuzz_input.h"

namespace gossipd::fuzz {

inline const std::string kSenders[] = {"m1", "m2", "x"};

struct Harness {
  protocol::InProcHub hub;
  std::unique_ptr<protocol::Node> node;

  explicit Harness(std::vector<uint64_t> segment_lengths = {}) {
    spdlog::set_level(spdlog::level::off);  // rejections log; millions of runs need not
    protocol::NodeOptions o;
    o.id = "self";
    o.validation.cluster_id = "fuzz";
    o.validation.max_message_bytes = 1 << 20;
    o.validation.max_members = 64;
    o.receive_thread = false;
    node = std::make_unique<protocol::Node>(o, hub);
    node->add_peer("m1", "inproc-hub://m1");  // nobody bound there: sends are lost
    node->add_peer("m2", "inproc-hub://m2");
    node->validator().set_segment_lengths(std::move(segment_lengths));
  }

  // Every message of the input that passes validation, in order.
  void each_valid(const uint8_t* data, size_t size, const std::function<void(protocol::Message&)>& fn) {
    for (auto& raw : read_messages(data, size, kSenders)) {
      if (auto m = node->validator().validate(std::move(raw))) fn(*m);
    }
  }
};

}  // namespace gossipd::fuzz
