#include "daemon/ctl/prometheus_targets.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace gossipd::daemon {
namespace {

// A JSON string: the characters JSON requires escaped, escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", static_cast<unsigned>(c));
      out += u;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string group_json(const TargetGroup& g) {
  std::string out = "{\"targets\": [";
  for (size_t i = 0; i < g.targets.size(); ++i) out += (i ? ", " : "") + quoted(g.targets[i]);
  out += "], \"labels\": {";
  for (size_t i = 0; i < g.labels.size(); ++i)
    out += (i ? ", " : "") + quoted(g.labels[i].first) + ": " + quoted(g.labels[i].second);
  return out + "}}";
}

}  // namespace

std::string prometheus_targets_json(const std::vector<TargetGroup>& groups) {
  std::string out = "[";
  for (size_t i = 0; i < groups.size(); ++i) out += (i ? ",\n " : "") + group_json(groups[i]);
  return out + "]\n";
}

void write_prometheus_targets(const std::string& path, const std::vector<TargetGroup>& groups) {
  const std::string json = prometheus_targets_json(groups);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  const bool written = f && std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = f && std::fclose(f) == 0;
  if (!written || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write the Prometheus targets file '" + path + "': " + why);
  }
}

}  // namespace gossipd::daemon
