#include "tests/support/records.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace gossipd::testing {

void parse_json(const std::string& json, google::protobuf::Message* into) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(json, into, opts);
  if (!status.ok()) {
    throw std::runtime_error("not a " + into->GetTypeName() + " (" + status.ToString() + "): '" + json + "'");
  }
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> complete_lines(const std::string& path) {
  const std::string text = file_text(path);
  std::vector<std::string> lines;
  for (size_t at = 0;;) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) break;
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

}  // namespace gossipd::testing
