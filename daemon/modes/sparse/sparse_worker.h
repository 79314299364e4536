#pragma once

#include <memory>

#include "daemon/modes/sparse/sparse_mode.h"
#include "daemon/worker/worker.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// --algo sparse's worker: every member up, then the epochs of row-parallel
// steps (daemon/modes/sparse/row_training); each epoch ends with the test set's
// loss and accuracy (a distributed forward on every member). The trained
// share goes back into `replica` at the end.
// `tags`: the sparse mode's range (Mode::tags; SparseTag).
std::unique_ptr<Worker> make_sparse_worker(WorkerContext& context, SparseReplica& replica,
                                           protocol::tags::Range tags);

}  // namespace gossipd::daemon
