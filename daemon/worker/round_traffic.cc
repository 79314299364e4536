#include "daemon/worker/round_traffic.h"

namespace gossipd::daemon {

TrafficStage one_allreduce(size_t members, uint64_t bytes, const protocol::CodecSpec& codec) {
  TrafficStage s;
  s.kind = TrafficStage::Kind::kAllreduce;
  s.allreduce_bytes = bytes;
  s.allreduce_codec = codec;
  s.groups.emplace_back();
  for (size_t i = 0; i < members; ++i) s.groups.back().push_back(static_cast<uint32_t>(i));
  return s;
}

}  // namespace gossipd::daemon
