#pragma once

#include <string>
#include <vector>

namespace gossipd::daemon {

// One group of Prometheus scrape targets (file-based service discovery,
// https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config):
// HOST:PORT of each member's --http, and the labels every series scraped
// from them carries.
struct TargetGroup {
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, std::string>> labels;
};

// The file_sd JSON of `groups`.
std::string prometheus_targets_json(const std::vector<TargetGroup>& groups);

// Replaces `path` with the JSON of `groups` (a temporary file beside it,
// renamed over it: Prometheus never reads half a file). Throws
// std::runtime_error naming the file and the errno text.
void write_prometheus_targets(const std::string& path, const std::vector<TargetGroup>& groups);

}  // namespace gossipd::daemon
