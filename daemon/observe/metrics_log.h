#pragma once

#include <google/protobuf/message.h>

#include <fstream>
#include <string>
#include <vector>

#include "daemon/observe/message_json.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// Appends one JSON object per line to a file, flushed per record so that a
// killed run keeps every finished line. An empty path disables it.
class JsonLinesWriter {
 public:
  explicit JsonLinesWriter(const std::string& path);    // throws UsageError
  void write(const google::protobuf::Message& record);  // throws DaemonError
  bool enabled() const { return out_.is_open(); }

 private:
  std::string path_;
  std::ofstream out_;
};

// The records a worker wrote to --control-out so far (gossipd run: one
// when it listens, one at its end); a line not yet whole is left out, and a
// missing file has none.
std::vector<proto::ControlRecord> read_control_records(const std::string& path);

}  // namespace gossipd::daemon
