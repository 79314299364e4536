#include "daemon/observe/metrics_log.h"

#include <google/protobuf/util/json_util.h>

#include <iterator>
#include <stdexcept>

#include "daemon/config/cli.h"

namespace gossipd::daemon {

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, opts);
  if (!status.ok()) throw DaemonError("cannot render JSON: " + status.ToString());
  return out;
}

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
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;  // a newer worker's fields
    if (google::protobuf::util::JsonStringToMessage(text.substr(begin, end - begin), &r, opts).ok())
      out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gossipd::daemon
