#pragma once

#include <string>
#include <vector>

namespace gossipd::daemon {

struct TrainerBenchOptions {
  std::string model = "mlp";
  size_t batch = 256;
  std::vector<int> threads{1, 2};
  int steps = 40;  // timed steps per trial
  int trials = 7;  // the median trial is reported
};

struct TrainerBenchResult {
  int threads = 1;
  double gemm_flops_per_step = 0;
  double step_seconds = 0;   // median full training step
  double sgemm_seconds = 0;  // median time of the same GEMMs alone
  double train_gflops() const { return gemm_flops_per_step / step_seconds * 1e-9; }
  double sgemm_gflops() const { return gemm_flops_per_step / sgemm_seconds * 1e-9; }
  double ratio() const { return sgemm_seconds / step_seconds; }
};

// Times a full training step (gather, forward, loss, backward, optimizer) on
// synthetic data and, in the same run, raw cblas_sgemm on exactly the GEMM
// shapes that step makes. Trials alternate between the two.
TrainerBenchResult bench_trainer(const TrainerBenchOptions& options, int threads);

}  // namespace gossipd::daemon
