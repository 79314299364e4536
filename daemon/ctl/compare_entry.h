#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "topology/grid.h"

namespace gossipd::daemon {

// One entry of gossipctl compare --algos: a mode (crossover, sgp, osgp,
// allreduce) or a grid shape, "grid:PRxPC".
struct CompareEntry {
  std::string label;  // as given: the name in the report
  std::string mode;   // gossipd run --algo
  std::optional<topology::GridShape> grid;
  // gossipd run --batch for this entry's workers: a grid is one replica,
  // so it takes the batch all `workers` data-parallel workers take together.
  size_t batch(size_t per_worker, size_t workers) const { return grid ? per_worker * workers : per_worker; }
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
