#pragma once
// What the daemon writes as JSON, read back into the proto messages it was
// rendered from (proto/gossip.proto): /status (proto::Status), --metrics-out
// lines (proto::EpochRecord), gossipctl's summary.json
// (proto::CompareSummary). Tests compare fields, not text.

#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::testing {

// Parses one JSON object into `into` (proto field names; a field the schema
// does not have is an error). Throws std::runtime_error quoting the text.
void parse_json(const std::string& json, google::protobuf::Message* into);

template <class M>
M parse_json(const std::string& json) {
  M m;
  parse_json(json, &m);
  return m;
}

// A file's whole text ("" when it does not exist).
std::string file_text(const std::string& path);

// The complete lines of a file that is perhaps still being written: a last
// line without its newline is left out. None when the file does not exist.
std::vector<std::string> complete_lines(const std::string& path);

// One message per complete line of a JSON-lines file.
template <class M>
std::vector<M> read_json_lines(const std::string& path) {
  std::vector<M> out;
  for (const auto& line : complete_lines(path)) out.push_back(parse_json<M>(line));
  return out;
}

// A --metrics-out file: one record per evaluation, in the order written.
inline std::vector<proto::EpochRecord> read_records(const std::string& path) {
  return read_json_lines<proto::EpochRecord>(path);
}

// A whole file holding one JSON object (summary.json).
template <class M>
M read_json_file(const std::string& path) {
  return parse_json<M>(file_text(path));
}

// The peers a member's /status names Byzantine (--robust), in its order.
std::vector<std::string> named_byzantine(const proto::Status& status);
// Whether a member's log says it named `peer` Byzantine.
bool log_names_byzantine(const std::string& log, const std::string& peer);

}  // namespace gossipd::testing
