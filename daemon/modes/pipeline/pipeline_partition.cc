#include "daemon/modes/pipeline/pipeline_partition.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "daemon/config/cli.h"

namespace gossipd::daemon {
namespace {

std::string read_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw UsageError("--partition " + path + ": cannot read it (give auto, L,L,... or a plan's JSON file)");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string stage_name(topology::PipelineShape shape, topology::PipelineCoord at,
                       const topology::LayerRanges& r) {
  return "pipeline " + std::to_string(shape.stages) + "x" + std::to_string(shape.replicas) + " stage " +
         std::to_string(at.stage) + " (replica " + std::to_string(at.replica) + "), partition " +
         topology::layer_counts(r);
}

topology::PipelineShape shape_of(const std::string& layout) {
  size_t k = 0, d = 0;
  int used = 0;
  if (std::sscanf(layout.c_str(), "pipeline %zux%zu stage%n", &k, &d, &used) != 2 || used == 0 || k == 0 ||
      d == 0)
    throw UsageError("checkpoint of '" + layout + "': no KxD shape in it: not a pipeline stage's");
  return {k, d};
}

topology::LayerRanges partition_of(const std::string& layout, size_t layers) {
  const std::string key = ", partition ";
  const size_t at = layout.rfind(key);
  try {
    if (at == std::string::npos) throw std::invalid_argument("no partition in it");
    return topology::parse_layer_counts(layout.substr(at + key.size()), layers);
  } catch (const std::invalid_argument& e) {
    throw UsageError("checkpoint of '" + layout + "': " + e.what() + ": not a pipeline stage's");
  }
}

std::string partition_in_plan_text(const std::string& json, const std::string& path) {
  const std::string key = "\"partition\":\"";
  const size_t at = json.find(key);
  const size_t end = at == std::string::npos ? at : json.find('"', at + key.size());
  if (end == std::string::npos)
    throw UsageError("--partition " + path +
                     ": no \"partition\" in it (make it with gossipctl plan pipeline --json)");
  return json.substr(at + key.size(), end - at - key.size());
}

std::optional<topology::LayerRanges> given_partition(const std::string& partition, size_t layers) {
  if (partition == "auto") return std::nullopt;
  const bool file = std::filesystem::exists(partition) || partition.find('/') != std::string::npos ||
                    partition.ends_with(".json");
  const std::string text = file ? partition_in_plan_text(read_plan(partition), partition) : partition;
  try {
    return topology::parse_layer_counts(text, layers);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--partition " + partition + ": " + e.what());
  }
}

}  // namespace gossipd::daemon
