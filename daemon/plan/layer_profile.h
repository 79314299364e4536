#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/layer_timing.h"
#include "trainer/model.h"
#include "trainer/optimizer.h"

namespace gossipd::daemon {

// A model's layers timed on this machine at several micro-batch sizes:
// what the pipeline planner prices plans with. A layer's time per sample
// depends strongly on the batch it multiplies (a 1024x1024 dense layer's
// 4 MB of weights are read once per micro-batch: 8 samples are memory
// bound), so a plan with micro-batches of b samples is priced with the
// timings at b.
struct LayerProfile {
  std::string model;    // model_key(): the layers it times
  std::string machine;  // this_machine(): where
  std::string date;     // when, UTC (2026-11-26T08:30:00Z)
  size_t input_floats = 0;
  double update_s_per_param = 0;  // one optimizer step
  double copy_s_per_param = 0;    // one copy of the parameters (1f1b-async's weight stashing)
  std::vector<size_t> sizes;      // micro-batch sizes timed, ascending
  std::vector<std::vector<trainer::LayerTiming>> at;  // per size, per layer

  // The layers at `micro_batch` samples: as timed, or between the two
  // nearest sizes timed, linear in the samples (beyond them, per sample as
  // at the nearest). Throws std::logic_error if nothing was timed.
  std::vector<trainer::LayerTiming> timings(size_t micro_batch) const;
  bool has(size_t micro_batch) const;
};

// "host, CPU model, N cores, OpenBLAS threads T": a profile from another
// machine prices nothing here.
std::string this_machine();
// Every layer's kind, output shape and parameters, the input shape and the
// optimizer: what makes two models time the same.
std::string model_key(const trainer::Model& model, const trainer::OptimizerOptions& optimizer);

// Times every layer of `model` (trainer::time_layers, the median of `reps`
// passes) at each of `sizes` that `into` lacks, and the optimizer's step,
// and adds them to `into` (a new profile when it is empty).
void profile_layers(trainer::Model& model, const trainer::OptimizerOptions& optimizer,
                    const std::vector<size_t>& sizes, int reps, LayerProfile& into);

// The profile as text (one line per size and layer), and back; the reader
// throws std::invalid_argument naming `path` and the line that does not
// read.
std::string profile_text(const LayerProfile& p);
LayerProfile parse_profile(const std::string& text, const std::string& path);

// The file in `dir` (gossipd run --cache-dir) the profile of a model is
// cached in, named by a hash of model_key().
std::filesystem::path profile_file(const std::filesystem::path& dir, const std::string& model_key);

// The profile of `model` at `sizes`: read from `file` when it is this
// machine's and this model's and has every size; the sizes it lacks timed
// and added; another machine's, another model's or an unreadable one
// profiled anew. The cache is written back (durably) when it changed.
// `said` tells what happened, in one line (from the cache of DATE, or
// why it profiled).
struct CachedProfile {
  LayerProfile profile;
  std::string said;
};
CachedProfile cached_profile(const std::filesystem::path& file, trainer::Model& model,
                             const trainer::OptimizerOptions& optimizer, const std::vector<size_t>& sizes,
                             int reps);

}  // namespace gossipd::daemon
