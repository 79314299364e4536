#pragma once
// An envelope as a peer of cluster `cluster` would send it: this build's
// protocol version, the cluster id, the sender and the type. Header-only, so
// protocol tests, daemon tests and the fuzz seed writer share it.

#include <string>

#include "proto/gossip.pb.h"
#include "protocol/wire/message.h"

namespace gossipd::testing {

inline proto::Envelope make_envelope(const std::string& cluster, const std::string& sender,
                                     proto::MessageType type) {
  proto::Envelope e;
  e.set_version(protocol::kProtocolVersion);
  e.set_cluster_id(cluster);
  e.set_sender(sender);
  e.set_type(type);
  return e;
}

}  // namespace gossipd::testing
