#include "daemon/modes/grid/timed_grid_comm.h"

namespace gossipd::daemon {

template <typename F>
void TimedGridComm::timed(Kind kind, F&& collective) {
  TrainingLoop::CommTimer t(loop_);
  const auto start = std::chrono::steady_clock::now();
  collective();
  seconds_[kind] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void TimedGridComm::allgather_column(std::span<float> data, std::span<const size_t> counts) {
  timed(kForward, [&] { inner_.allgather_column(data, counts); });
}

void TimedGridComm::reduce_scatter_column(std::span<float> data, std::span<const size_t> counts) {
  timed(kInputGradient, [&] { inner_.reduce_scatter_column(data, counts); });
}

void TimedGridComm::allreduce_row(std::span<float> data) {
  timed(kWeightGradient, [&] { inner_.allreduce_row(data); });
}

void TimedGridComm::allreduce_all(std::span<float> data) {
  timed(kWeightGradient, [&] { inner_.allreduce_all(data); });
}

void TimedGridComm::sum_column(std::span<float> data) {
  timed(kWeightGradient, [&] { inner_.sum_column(data); });
}

void TimedGridComm::exchange_halo(std::span<const float> up, std::span<const float> down,
                                  std::span<float> from_up, std::span<float> from_down) {
  timed(kHalo, [&] { inner_.exchange_halo(up, down, from_up, from_down); });
}

}  // namespace gossipd::daemon
