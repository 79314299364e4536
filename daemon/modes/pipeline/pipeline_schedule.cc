#include "daemon/modes/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace gossipd::topology {

std::string schedule_name(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneFOneB:
      return "1f1b";
    case PipelineSchedule::kOneFOneBAsync:
      return "1f1b-async";
    case PipelineSchedule::kZeroBubble:
      return "zb";
  }
  return "?";
}

PipelineSchedule parse_schedule(std::string_view text) {
  for (PipelineSchedule s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                             PipelineSchedule::kOneFOneBAsync, PipelineSchedule::kZeroBubble}) {
    if (text == schedule_name(s)) return s;
  }
  throw std::invalid_argument("'" + std::string(text) +
                              "' is not a schedule; the schedules are gpipe, 1f1b, 1f1b-async, zb");
}

namespace {

// zb: warm-up forwards, then per micro-batch its backward (the first stage,
// whose input gradient nobody waits for, whole; the others B), the W of
// the one before, and the next forward.
std::vector<PipelineOp> zero_bubble_ops(size_t stages, size_t micros, size_t stage) {
  std::vector<PipelineOp> ops;
  const bool first = stage == 0;
  // 1f1b's warm-up, and one forward more at the first stage: every stage
  // holds one micro-batch more than under 1f1b (the others between B and W).
  const uint64_t warm = std::min<uint64_t>(first ? stages + 1 : stages - stage, micros);
  uint64_t forward = 0;
  while (forward < warm) ops.push_back({PipelineOp::kForward, forward++});
  for (uint64_t m = 0; m < micros; ++m) {
    ops.push_back({first ? PipelineOp::kBackward : PipelineOp::kBackwardInput, m});
    if (!first && m > 0) ops.push_back({PipelineOp::kBackwardWeights, m - 1});
    if (forward < micros) ops.push_back({PipelineOp::kForward, forward++});
  }
  if (!first && micros > 0) ops.push_back({PipelineOp::kBackwardWeights, micros - 1});
  return ops;
}

}  // namespace

std::vector<PipelineOp> pipeline_ops(PipelineSchedule schedule, size_t stages, size_t micros, size_t stage) {
  if (stage >= stages) throw std::invalid_argument("pipeline_ops: stage outside the pipeline");
  if (schedule == PipelineSchedule::kZeroBubble) return zero_bubble_ops(stages, micros, stage);
  std::vector<PipelineOp> ops;
  ops.reserve(2 * micros);
  if (schedule == PipelineSchedule::kGpipe) {
    for (uint64_t m = 0; m < micros; ++m) ops.push_back({PipelineOp::kForward, m});
    for (uint64_t m = 0; m < micros; ++m) ops.push_back({PipelineOp::kBackward, m});
    return ops;
  }
  // Warm-up: the later stages' forwards are still ahead of this one's first
  // backward, one per stage downstream.
  const uint64_t warm = std::min<uint64_t>(stages - stage - 1, micros);
  uint64_t forward = 0, backward = 0;
  while (forward < warm) ops.push_back({PipelineOp::kForward, forward++});
  while (forward < micros) {
    ops.push_back({PipelineOp::kForward, forward++});
    ops.push_back({PipelineOp::kBackward, backward++});
  }
  while (backward < micros) ops.push_back({PipelineOp::kBackward, backward++});
  return ops;
}

size_t max_in_flight(const std::vector<PipelineOp>& ops) {
  size_t now = 0, most = 0;
  for (const PipelineOp& op : ops) {
    if (op.kind == PipelineOp::kForward) {
      most = std::max(most, ++now);
    } else if (op.kind != PipelineOp::kBackwardInput && now > 0) {
      --now;
    }
  }
  return most;
}

size_t default_micro_batches(size_t batch) {
  for (size_t m = batch / kMicroBatchSamples; m > 1; --m) {
    if (batch % m == 0) return m;
  }
  return 1;
}

double gpipe_bubble(size_t stages, size_t micros) {
  if (stages == 0 || micros == 0) return 0;
  return static_cast<double>(stages - 1) / static_cast<double>(micros + stages - 1);
}

std::vector<size_t> pipeline_ranks(PipelineShape shape, size_t replica) {
  std::vector<size_t> ranks;
  for (size_t k = 0; k < shape.stages; ++k) ranks.push_back(replica * shape.stages + k);
  return ranks;
}

std::vector<size_t> stage_ranks(PipelineShape shape, size_t stage) {
  std::vector<size_t> ranks;
  for (size_t d = 0; d < shape.replicas; ++d) ranks.push_back(d * shape.stages + stage);
  return ranks;
}

LayerRanges parse_layer_counts(std::string_view text, size_t layers) {
  std::string what(1, '\'');
  what.append(text).push_back('\'');
  LayerRanges r;
  r.first.push_back(0);
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    size_t n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || n == 0) {
      throw std::invalid_argument(what + " is not a list of layer counts, each at least 1, like 3,4");
    }
    if (n > layers - r.first.back()) {  // checked before the sum, which could wrap around
      throw std::invalid_argument(what + " covers more than the model's " + std::to_string(layers) +
                                  " layers");
    }
    r.first.push_back(r.first.back() + n);
    pos = comma + 1;
  }
  if (r.first.back() != layers) {
    throw std::invalid_argument(what + " covers " + std::to_string(r.first.back()) +
                                " layers, the model has " + std::to_string(layers));
  }
  return r;
}

std::string layer_counts(const LayerRanges& ranges) {
  std::string s;
  for (size_t k = 0; k < ranges.stages(); ++k) {
    if (k > 0) s.push_back(',');
    s.append(std::to_string(ranges.end(k) - ranges.begin(k)));
  }
  return s;
}

}  // namespace gossipd::topology
