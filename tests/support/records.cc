#include "tests/support/records.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "daemon/observe/message_json.h"

namespace gossipd::testing {

void parse_json(const std::string& json, google::protobuf::Message* into) {
  std::string why;
  if (!daemon::from_json(json, *into, &why, /*strict=*/true))
    throw std::runtime_error("not a " + into->GetTypeName() + " (" + why + "): '" + json + "'");
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

std::vector<std::string> named_byzantine(const proto::Status& status) {
  std::vector<std::string> named;
  for (const auto& r : status.robustness())
    if (r.named()) named.push_back(r.peer());
  return named;
}

bool log_names_byzantine(const std::string& log, const std::string& peer) {
  return log.find("member '" + peer + "' is named Byzantine in round") != std::string::npos;
}

}  // namespace gossipd::testing
