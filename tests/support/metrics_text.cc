#include "tests/support/metrics_text.h"

#include <stdexcept>

namespace gossipd::testing {
namespace {

[[noreturn]] void malformed(const std::string& line, const std::string& why) {
  throw std::runtime_error("/metrics: " + why + " in line '" + line + "'");
}

// Reads `"value"` at `at` (just past the opening quote), undoing the escapes
// \\, \" and \n; leaves `at` past the closing quote.
std::string label_value(const std::string& line, size_t& at) {
  std::string v;
  while (at < line.size() && line[at] != '"') {
    if (line[at] == '\\' && at + 1 < line.size()) {
      ++at;
      v += line[at] == 'n' ? '\n' : line[at];
    } else {
      v += line[at];
    }
    ++at;
  }
  if (at == line.size()) malformed(line, "unterminated label value");
  ++at;
  return v;
}

Labels labels(const std::string& line, size_t& at) {  // `at` just past '{'
  Labels out;
  while (at < line.size() && line[at] != '}') {
    const size_t eq = line.find("=\"", at);
    if (eq == std::string::npos) malformed(line, "label without =\"");
    const std::string key = line.substr(at, eq - at);
    at = eq + 2;
    out[key] = label_value(line, at);
    if (at < line.size() && line[at] == ',') ++at;
  }
  if (at == line.size()) malformed(line, "unterminated labels");
  ++at;
  return out;
}

Sample sample(const std::string& line) {
  Sample s;
  size_t at = line.find_first_of("{ ");
  if (at == std::string::npos || at == 0) malformed(line, "no name and value");
  s.name = line.substr(0, at);
  if (line[at] == '{') s.labels = labels(line, ++at);
  if (at >= line.size() || line[at] != ' ') malformed(line, "no value");
  const std::string rest = line.substr(at + 1);
  size_t used = 0;
  try {
    s.value = std::stod(rest, &used);  // also NaN, +Inf, -Inf
  } catch (const std::exception&) {
    malformed(line, "value is not a number");
  }
  // What may follow is a timestamp.
  if (rest.find_first_not_of(" 0123456789-", used) != std::string::npos) malformed(line, "trailing text");
  return s;
}

}  // namespace

MetricsText::MetricsText(std::string text) : text_(std::move(text)) {
  for (size_t at = 0; at < text_.size();) {
    size_t end = text_.find('\n', at);
    if (end == std::string::npos) end = text_.size();
    const std::string line = text_.substr(at, end - at);
    if (!line.empty() && line[0] != '#') samples_.push_back(sample(line));
    at = end + 1;
  }
}

std::optional<double> MetricsText::value(const std::string& name, const Labels& labels) const {
  for (const auto& s : samples_) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nullopt;
}

}  // namespace gossipd::testing
