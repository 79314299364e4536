#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// Renders a protobuf message as one JSON object (proto field names, zero
// values included), so every JSON the daemon prints has its schema in a
// .proto. A Status's mode_status (a mode's own message, in an Any) is shown
// under the mode's name, "@type" included: {"algo": "grid", ..., "grid":
// {"@type": "type.googleapis.com/gossipd.proto.GridStatus", "rows": 2, ...}},
// in a Status alone and in a ControlRecord's.
std::string to_json(const google::protobuf::Message& message);

// Parses what to_json wrote (or a peer's /status) into `into`: the mode's
// object back into mode_status where this binary knows its type (a type it
// does not know is left out). False, with `why`, when it is not that message;
// `strict`: a field `into` does not have is an error too.
bool from_json(const std::string& text, google::protobuf::Message& into, std::string* why = nullptr,
               bool strict = false);

// The mode's own status in `s` (a default one when it holds another or none).
template <class T>
T mode_status(const proto::Status& s) {
  T out;
  if (s.mode_status().Is<T>()) s.mode_status().UnpackTo(&out);
  return out;
}

// Changes the mode's own status in `s`: `change(T&)` on it, packed again.
template <class T, class F>
void update_mode_status(proto::Status& s, F&& change) {
  T m = mode_status<T>(s);
  change(m);
  s.mutable_mode_status()->PackFrom(m);
}

}  // namespace gossipd::daemon
