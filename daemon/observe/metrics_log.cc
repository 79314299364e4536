#include "daemon/observe/metrics_log.h"

#include <iterator>
#include <stdexcept>

#include "daemon/config/cli.h"

namespace gossipd::daemon {

JsonLinesWriter::JsonLinesWriter(const std::string& path) : path_(path) {
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::app);
  if (!out_)
    throw UsageError("cannot open " + path + " for writing (check the directory exists and is writable)");
}

void JsonLinesWriter::write(const google::protobuf::Message& record) {
  if (!out_.is_open()) return;
  out_ << to_json(record) << '\n';
  out_.flush();
  if (!out_) throw DaemonError("writing " + path_ + " failed (disk full?)");
}

std::vector<proto::ControlRecord> read_control_records(const std::string& path) {
  std::ifstream in(path);
  std::vector<proto::ControlRecord> out;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t begin = 0;
  for (size_t end = text.find('\n'); end != std::string::npos;
       begin = end + 1, end = text.find('\n', begin)) {
    proto::ControlRecord r;
    if (from_json(text.substr(begin, end - begin), r))
      out.push_back(std::move(r));  // a newer worker's fields left out
  }
  return out;
}

}  // namespace gossipd::daemon
