#pragma once

#include "daemon/config/run_options.h"

namespace gossipd::daemon {

// gossipd run --algo sparse (Demirci and Ferhatosmanoglu): one sparse
// network — a RadiX-Net of --neurons N x --layers L, ReLU layers on its
// edges and a dense softmax head of ten classes — trained on Fashion-MNIST
// made into the challenge's inputs (√N × √N, binarised), every layer's
// neurons spread over the members by --partition (rank r, members sorted by
// id, is process r). Each step is daemon/sparse/row_training's: the whole
// cluster is one model replica, --batch its batch. Takes no joiners and
// writes no checkpoints (both refused at start); a member that dies stops
// the others within --timeout-ms plus --failure-timeout-ms, naming it.
// Returns the exit code; bad flags are a UsageError.
int run_sparse(const RunOptions& options);

}  // namespace gossipd::daemon
