#pragma once

#include <memory>

#include "daemon/worker/worker.h"

namespace gossipd::daemon {

// --algo grid: this process is one cell of a Pr x Pc grid holding one model
// replica (daemon/grid). Every member samples the same batches (the grid's
// batch --batch), its grid column trains on its slice of each.
std::unique_ptr<Worker> make_grid_worker(WorkerContext& context);

// The grid's checks once the members and the model are known: the shape
// parses, has as many cells as there are members, and the model and batch split into it
// (throws UsageError naming what does not fit).
void check_grid(const RunOptions& options, size_t members, const trainer::Model& model);

}  // namespace gossipd::daemon
