#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gossipd::topology {

// A pipeline holds one model replica in K stages of consecutive layers
// (Akintoye et al.; GPipe; PipeDream); a batch is split into M
// micro-batches that flow through the stages. The schedule says, for one
// stage, in which order it runs its micro-batches' forward and backward
// passes. Pure functions of (schedule, K, M, stage).
enum class PipelineSchedule {
  kGpipe,          // all forwards, then all backwards; one update per batch
  kOneFOneB,       // warm-up forwards, then one forward and one backward in turn; one update per batch
  kOneFOneBAsync,  // 1F1B without a flush: an update after every backward (weight stashing)
  // 1F1B with the backward split in two (Qi et al., zero bubble pipeline
  // parallelism): a stage but the first runs a micro-batch's input gradient
  // (B) as soon as it can, for the stage before, and its weights' gradient
  // (W) one micro-batch later, where 1F1B would have it wait; the first
  // stage warms up with one forward more. One update per batch; the same
  // gradients as 1f1b, bit for bit.
  kZeroBubble,
};

std::string schedule_name(PipelineSchedule s);  // "gpipe", "1f1b", "1f1b-async", "zb"
// Throws std::invalid_argument naming the schedules there are.
PipelineSchedule parse_schedule(std::string_view text);

struct PipelineOp {
  // kBackward is the whole backward; zb splits it into kBackwardInput and,
  // later, kBackwardWeights.
  enum Kind : uint8_t { kForward, kBackward, kBackwardInput, kBackwardWeights } kind = kForward;
  uint64_t micro = 0;  // which micro-batch, 0 .. M-1
  bool operator==(const PipelineOp&) const = default;
};

// The ordered forward and backward passes stage `stage` (0 .. K-1) runs for
// M micro-batches. Every micro-batch's forward comes before its backward and
// backwards run in micro-batch order (zb: its B before its W, and each kind
// in micro-batch order), so gradients accumulate in the same order under
// every schedule. gpipe holds all M micro-batches' activations at once;
// 1f1b (PipeDream-flush) at most K - stage; zb one more (the first stage
// by its warm-up, the others by a micro-batch between its B and its W).
// 1f1b-async has the
// order of 1f1b over the whole run: its M is every micro-batch of the
// epoch, so the pipeline never drains between batches.
std::vector<PipelineOp> pipeline_ops(PipelineSchedule schedule, size_t stages, size_t micros, size_t stage);

// The most micro-batches whose forward has run and whose backward (zb: its
// W) has not, at any point of `ops`.
size_t max_in_flight(const std::vector<PipelineOp>& ops);

// M when none is given: the divisor of the batch whose micro-batches come
// nearest to kMicroBatchSamples samples without going under it (or M = 1
// for a batch below it). On this project's machine the CNN's pipeline was
// fastest at micro-batches of 8: smaller ones lose in the GEMMs, larger
// ones in the bubble (tests/bench/README.md).
constexpr size_t kMicroBatchSamples = 8;
size_t default_micro_batches(size_t batch);
// `given`, or default_micro_batches(batch) for 0.
inline size_t micro_batches_for(size_t batch, size_t given) {
  return given != 0 ? given : default_micro_batches(batch);
}

// GPipe's bubble: the fraction of a step a stage idles, (K-1)/(M+K-1), with
// equal stages and free transfers.
double gpipe_bubble(size_t stages, size_t micros);

// K stages x D replicas (pipelines): the D processes holding the same stage
// allreduce its gradients. Rank r is stage r mod K of pipeline r / K: a
// pipeline's stages, which talk at every micro-batch, are consecutive ranks
// (placed in order, they share a host where they can).
struct PipelineShape {
  size_t stages = 1;
  size_t replicas = 1;
  size_t procs() const { return stages * replicas; }
};
struct PipelineCoord {
  size_t stage = 0;
  size_t replica = 0;
};
inline PipelineCoord pipeline_coord(PipelineShape shape, size_t rank) {
  return {rank % shape.stages, rank / shape.stages};
}
// The K ranks of pipeline `replica`, by stage; the D ranks holding `stage`.
std::vector<size_t> pipeline_ranks(PipelineShape shape, size_t replica);
std::vector<size_t> stage_ranks(PipelineShape shape, size_t stage);

// A contiguous partition of L layers into stages: stage k runs layers
// [first[k], first[k+1]) (first[0] = 0, first[K] = L).
struct LayerRanges {
  std::vector<size_t> first;
  size_t stages() const { return first.empty() ? 0 : first.size() - 1; }
  size_t begin(size_t stage) const { return first.at(stage); }
  size_t end(size_t stage) const { return first.at(stage + 1); }
};

// "L,L,..." — the number of layers in each stage; throws
// std::invalid_argument saying what is wrong (not a list of positive
// counts, or not adding up to `layers`).
LayerRanges parse_layer_counts(std::string_view text, size_t layers);
std::string layer_counts(const LayerRanges& ranges);  // "2,3,4"

}  // namespace gossipd::topology
