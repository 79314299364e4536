#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/run_options.h"
#include "topology/grid.h"
#include "topology/pipeline.h"

namespace gossipd::daemon {

// One entry of gossipctl compare --algos: a mode (crossover, sgp, osgp,
// allreduce), a grid shape, "grid:PRxPC", or a pipeline, "pipeline:K" (K
// stages) or "pipeline:KxD" (D pipelines of K stages), or compute groups,
// "groups:G" (G groups of the --workers).
struct CompareEntry {
  std::string label;  // as given: the name in the report
  std::string mode;   // gossipd run --algo
  std::optional<topology::GridShape> grid;
  std::optional<topology::PipelineShape> pipeline;
  std::optional<size_t> compute_groups;
  // gossipd run --batch for this entry's workers: a grid or a pipeline is
  // one replica, so it takes the batch all `workers` data-parallel workers
  // take together (D pipelines share it).
  size_t batch(size_t per_worker, size_t workers) const;
  // Processes the entry needs, or 0 for any number (the data-parallel modes).
  size_t processes() const;
  // "" when the entry can run on `workers` processes, else why not.
  std::string refusal(size_t workers) const;
  // Its gossipd run flags beyond --algo: --grid, --stages and --replicas, or --compute-groups.
  std::vector<std::string> flags() const;
  // What the mode's hooks read of gossipd run's options (steps per epoch).
  RunOptions run_options(size_t batch) const;
  // Mode::one_replica: no consensus distance, no gossip bytes.
  bool one_replica() const;
};

// The entry as a directory and cluster-id name ("grid:4x2" -> "grid-4x2").
std::string entry_dir(std::string label);

// Throws UsageError naming the entry and what it may be.
CompareEntry parse_compare_entry(const std::string& text);

// "" when `text` is an entry, else why not (for the flag's validator).
std::string compare_entry_error(const std::string& text);

}  // namespace gossipd::daemon
