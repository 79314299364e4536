#pragma once

#include <string>
#include <string_view>

namespace gossipd::protocol {

// A lane: a second connection to a peer, under a peer name of its own on
// every transport, over the same link (the fault layer gives it the peer's
// delay, jitter and loss). What goes on it does not queue behind the bulk
// data of the peer's main connection (a TCP stream, its socket buffer, its
// ZeroMQ pipe): on a slow link a probe answer behind a round's segments
// waits seconds, and the member is evicted although it runs.
enum class Lane {
  kControl,  // membership's probes and their answers
  kReunion,  // a REUNION to a member no longer in the view
};

// The transport's peer name of `peer`'s `lane`.
std::string lane_name(Lane lane, std::string_view peer);
// The peer a transport peer name reaches: the peer of a lane, else `name`.
std::string_view lane_peer(std::string_view name);
bool is_lane(std::string_view name);

}  // namespace gossipd::protocol
