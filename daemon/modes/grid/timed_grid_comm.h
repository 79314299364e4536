#pragma once

#include <array>
#include <chrono>
#include <span>

#include "daemon/modes/grid/grid_comm.h"
#include "daemon/worker/training_loop.h"

namespace gossipd::daemon {

// A grid step's collectives, each timed as communication
// (TrainingLoop::CommTimer: comm ms per round is the time the step waited on
// them, as for the other modes) and by kind, as GridBytes counts bytes.
class TimedGridComm : public GridComm {
 public:
  enum Kind { kForward, kInputGradient, kWeightGradient, kHalo, kKinds };
  static constexpr std::array<const char*, kKinds> kKindNames{"forward", "input_gradient", "weight_gradient",
                                                              "halo"};

  TimedGridComm(GridComm& inner, TrainingLoop& loop) : inner_(inner), loop_(loop) {}
  void allgather_column(std::span<float> data, std::span<const size_t> counts) override;
  void reduce_scatter_column(std::span<float> data, std::span<const size_t> counts) override;
  void allreduce_row(std::span<float> data) override;
  void allreduce_all(std::span<float> data) override;
  // LARS's norms: with the weight gradients (their bytes are in no kind).
  void sum_column(std::span<float> data) override;
  void exchange_halo(std::span<const float> up, std::span<const float> down, std::span<float> from_up,
                     std::span<float> from_down) override;

  // Seconds spent in each kind's collectives since this was made.
  const std::array<double, kKinds>& seconds() const { return seconds_; }

 private:
  template <typename F>
  void timed(Kind kind, F&& collective);

  GridComm& inner_;
  TrainingLoop& loop_;
  std::array<double, kKinds> seconds_{};
};

}  // namespace gossipd::daemon
