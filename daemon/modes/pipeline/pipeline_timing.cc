#include "daemon/modes/pipeline/pipeline_timing.h"

#include <algorithm>
#include <limits>

namespace gossipd::topology {
namespace {

constexpr double kNotYet = std::numeric_limits<double>::infinity();

struct Progress {
  std::vector<std::vector<PipelineOp>> ops;      // per stage
  std::vector<size_t> next;                      // per stage: index of its next op
  std::vector<double> free_at;                   // per stage
  std::vector<std::vector<double>> forward_end;  // [stage][micro]
  std::vector<std::vector<double>> backward_end;
  std::vector<double> busy;  // per stage: compute so far
  // Per stage: the micro-batch whose forward state the layers hold, that
  // of the split layers (their W's) and that of the others (their B's);
  // kNone before any.
  std::vector<size_t> split_state, other_state;
};

constexpr size_t kNone = std::numeric_limits<size_t>::max();

// A backward's compute at stage k (whole, its B or its W), and more when
// the layers it runs hold another micro-batch's state, which each op on a
// micro-batch leaves there: a forward all of it, a B the unsplit layers',
// a W the split ones' (a convolution's im2col), a whole backward all.
double backward_seconds(Progress& p, const StageTimes& t, size_t k, const PipelineOp& op) {
  const double weights = t.weights.empty() ? 0.0 : t.weights[k];
  const double refind = t.refind.empty() ? 0.0 : t.refind[k];
  const double split = t.refind_weights.empty() ? 0.0 : std::min(t.refind_weights[k], refind);
  const bool runs_split = op.kind != PipelineOp::kBackwardInput;
  const bool runs_other = op.kind != PipelineOp::kBackwardWeights;
  double seconds = op.kind == PipelineOp::kBackward ? t.backward[k]
                   : runs_split                     ? weights
                                                    : t.backward[k] - weights;
  if (runs_split && p.split_state[k] != op.micro) seconds += split;
  if (runs_other && p.other_state[k] != op.micro) seconds += refind - split;
  if (runs_split) p.split_state[k] = op.micro;
  if (runs_other) p.other_state[k] = op.micro;
  return seconds;
}

// When op `op` of stage `k` may start as far as its input goes, or kNotYet.
double input_ready(const Progress& p, const StageTimes& t, size_t k, const PipelineOp& op) {
  const size_t last = p.ops.size() - 1;
  if (op.kind == PipelineOp::kForward) {
    if (k == 0) return 0;
    const double at = p.forward_end[k - 1][op.micro];
    return at == kNotYet ? kNotYet : at + t.to_next[k - 1];
  }
  if (op.kind == PipelineOp::kBackwardWeights) return p.backward_end[k][op.micro];
  if (k == last) return p.forward_end[k][op.micro];
  const double at = p.backward_end[k + 1][op.micro];
  return at == kNotYet ? kNotYet : at + t.to_prev[k];
}

// Runs stage k's next op if its input is there; false when it cannot yet.
bool advance(Progress& p, const StageTimes& t, PipelineSchedule schedule, size_t k) {
  if (p.next[k] == p.ops[k].size()) return false;
  const PipelineOp& op = p.ops[k][p.next[k]];
  const double ready = input_ready(p, t, k, op);
  if (ready == kNotYet) return false;
  const double start = std::max(p.free_at[k], ready);
  if (op.kind == PipelineOp::kForward) {
    p.free_at[k] = p.forward_end[k][op.micro] = start + t.forward[k];
    p.busy[k] += t.forward[k];
    p.split_state[k] = p.other_state[k] = op.micro;
  } else {
    const double seconds = backward_seconds(p, t, k, op);
    p.free_at[k] = start + seconds;
    // What the stage before waits for: the whole backward or its B.
    if (op.kind != PipelineOp::kBackwardWeights) p.backward_end[k][op.micro] = p.free_at[k];
    p.busy[k] += seconds;
    if (schedule == PipelineSchedule::kOneFOneBAsync) p.free_at[k] += t.update[k];
  }
  ++p.next[k];
  return true;
}

}  // namespace

std::optional<PipelineTiming> simulate_pipeline(PipelineSchedule schedule, size_t micros,
                                                const StageTimes& t) {
  const size_t stages = t.forward.size();
  Progress p;
  for (size_t k = 0; k < stages; ++k) p.ops.push_back(pipeline_ops(schedule, stages, micros, k));
  p.next.assign(stages, 0);
  p.free_at.assign(stages, 0);
  p.forward_end.assign(stages, std::vector<double>(micros, kNotYet));
  p.backward_end = p.forward_end;
  p.busy.assign(stages, 0);
  p.split_state.assign(stages, kNone);
  p.other_state.assign(stages, kNone);
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t k = 0; k < stages; ++k) {
      while (advance(p, t, schedule, k)) moved = true;
    }
  }
  PipelineTiming out;
  for (size_t k = 0; k < stages; ++k) {
    if (p.next[k] != p.ops[k].size()) return std::nullopt;
    const bool once = schedule != PipelineSchedule::kOneFOneBAsync;
    const double end = p.free_at[k] + (once ? t.update[k] : 0);
    out.step = std::max(out.step, end);
    const double updates = once ? 1.0 : static_cast<double>(micros);
    out.busy.push_back(p.busy[k] + updates * t.update[k]);
  }
  for (double b : out.busy) out.bubble.push_back(out.step > 0 ? 1.0 - b / out.step : 0.0);
  return out;
}

}  // namespace gossipd::topology
