#pragma once

#include <memory>

#include "daemon/modes/grid/grid_shape.h"
#include "daemon/worker/replica.h"
#include "daemon/worker/worker.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// --algo grid: this process is one cell of a Pr x Pc grid holding one model
// replica (daemon/grid). Every member samples the same batches (the grid's
// batch --batch), its grid column trains on its slice of each.
// `tags`: the grid mode's range (Mode::tags).
std::unique_ptr<Worker> make_grid_worker(WorkerContext& context, topology::GridShape shape,
                                         protocol::tags::Range tags);

// The grid's checks once the members and the model are known: the shape
// parses, has as many cells as there are members, and the model and batch split into it
// (throws UsageError naming what does not fit).
void check_grid(const RunOptions& options, const std::string& grid, size_t members,
                const trainer::Model& model);

// "grid 2x2 cell (row 1, column 0)": the layout its checkpoints carry.
std::string cell_name(topology::GridShape shape, topology::GridCoord at);

// What a grid cell's checkpoint holds: its blocks of the parameters and of
// the optimizer state, named by the shape and the cell (a checkpoint of
// another shape is refused by name).
StateLayout grid_state_layout(topology::GridShape shape, const Placement& where,
                              const trainer::Trainer& trainer);

}  // namespace gossipd::daemon
