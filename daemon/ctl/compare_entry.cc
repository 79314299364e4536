#include "daemon/ctl/compare_entry.h"

#include <algorithm>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/worker/modes.h"

namespace gossipd::daemon {

std::string entry_dir(std::string label) {
  std::replace(label.begin(), label.end(), ':', '-');
  return label;
}

namespace {

// "K" or "KxD".
topology::PipelineShape parse_pipeline(const std::string& text) {
  const size_t x = text.find('x');
  topology::PipelineShape shape;
  try {
    size_t used = 0;
    shape.stages = std::stoul(text.substr(0, x), &used);
    if (used != text.substr(0, x).size()) throw std::invalid_argument("junk");
    if (x != std::string::npos) {
      shape.replicas = std::stoul(text.substr(x + 1), &used);
      if (used != text.size() - x - 1) throw std::invalid_argument("junk");
    }
  } catch (const std::exception&) {
    shape.stages = 0;
  }
  if (shape.stages == 0 || shape.replicas == 0 || text.empty() || text[0] == '-')
    throw UsageError("--algos pipeline:" + text +
                     ": give K stages or KxD (D pipelines of K stages), e.g. pipeline:2");
  return shape;
}

}  // namespace

size_t CompareEntry::batch(size_t per_worker, size_t workers) const {
  if (pipeline) return per_worker * workers / pipeline->replicas;
  return grid ? per_worker * workers : per_worker;
}

size_t CompareEntry::processes() const {
  if (grid) return grid->procs();
  return pipeline ? pipeline->procs() : 0;
}

std::string CompareEntry::refusal(size_t workers) const {
  if (processes() != 0 && processes() != workers) {
    return "--algos " + label + " needs " + std::to_string(processes()) + " processes, --workers is " +
           std::to_string(workers);
  }
  if (compute_groups && workers % *compute_groups != 0) {
    return "--algos " + label + ": " + std::to_string(*compute_groups) + " groups do not divide --workers " +
           std::to_string(workers);
  }
  return "";
}

std::vector<std::string> CompareEntry::flags() const {
  if (grid) return {"--grid", grid->name()};
  if (compute_groups) return {"--compute-groups", std::to_string(*compute_groups)};
  if (pipeline)
    return {"--stages", std::to_string(pipeline->stages), "--replicas", std::to_string(pipeline->replicas)};
  return {};
}

RunOptions CompareEntry::run_options(size_t batch) const {
  RunOptions o;
  o.algo = mode;
  o.train.batch = batch;
  if (grid) o.grid = grid->name();
  if (compute_groups) o.compute_groups = *compute_groups;
  if (pipeline) {
    o.stages = pipeline->stages;
    o.replicas = pipeline->replicas;
  }
  return o;
}

CompareEntry parse_compare_entry(const std::string& text) {
  CompareEntry e;
  e.label = text;
  const size_t colon = text.find(':');
  e.mode = text.substr(0, colon);
  if (e.mode == "pipeline") {
    if (colon == std::string::npos)
      throw UsageError("--algos pipeline needs its stages: pipeline:K or pipeline:KxD, e.g. pipeline:2");
    e.pipeline = parse_pipeline(text.substr(colon + 1));
    return e;
  }
  if (e.mode == "groups") {
    const std::string g = colon == std::string::npos ? "" : text.substr(colon + 1);
    size_t used = 0;
    try {
      e.compute_groups = std::stoul(g, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != g.size() || g[0] == '-' || e.compute_groups == 0u)
      throw UsageError("--algos " + text + ": give the number of compute groups, groups:G, e.g. groups:2");
    return e;
  }
  if (e.mode == "grid") {
    if (colon == std::string::npos)
      throw UsageError("--algos grid needs its shape: grid:PRxPC, e.g. grid:4x2");
    try {
      e.grid = topology::parse_grid_shape(text.substr(colon + 1));
    } catch (const std::invalid_argument& err) {
      throw UsageError("--algos " + text + ": " + err.what());
    }
    return e;
  }
  if (e.mode == "sparse")
    throw UsageError(
        "--algos sparse: compare does not run the sparse mode (its network is not the MLP or "
        "CNN the others train); run gossipd run --algo sparse, or gossipctl bench sparse");
  std::string modes;
  for (const std::string& m : mode_names()) {
    if (m == "sparse") continue;
    if (m == e.mode && colon == std::string::npos) return e;
    const std::string shown = m == "grid"       ? "grid:PRxPC"
                              : m == "pipeline" ? "pipeline:K[xD]"
                              : m == "groups"   ? "groups:G"
                                                : m;
    modes += (modes.empty() ? "" : ", ") + shown;
  }
  throw UsageError("--algos " + text + " is not one of " + modes);
}

bool CompareEntry::one_replica() const { return find_mode(mode).one_replica; }

std::string compare_entry_error(const std::string& text) {
  try {
    parse_compare_entry(text);
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

}  // namespace gossipd::daemon
