#include "daemon/bench/trainer_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>

#include "daemon/config/cli.h"
#include "trainer/models.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

trainer::Dataset synthetic_dataset(trainer::Shape shape, size_t samples, uint64_t seed) {
  trainer::Dataset d;
  d.height = shape.height;
  d.width = shape.width;
  d.channels = shape.channels;
  trainer::Rng rng(seed);
  d.images.resize(samples * shape.size());
  for (auto& x : d.images) x = static_cast<float>(rng.normal());
  d.labels.resize(samples);
  for (auto& l : d.labels) l = static_cast<uint8_t>(rng.below(10));
  return d;
}

struct GemmBuffers {
  std::vector<float> a, b, c;
};

void run_gemm(const trainer::GemmShape& g, GemmBuffers& buf) {
  const int lda = g.trans_a ? g.m : g.k;
  const int ldb = g.trans_b ? g.k : g.n;
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              g.m, g.n, g.k, 1.0f, buf.a.data(), lda, buf.b.data(), ldb, 0.0f, buf.c.data(), g.n);
}

}  // namespace

TrainerBenchResult bench_trainer(const TrainerBenchOptions& o, int threads) {
  set_blas_threads(threads);
  trainer::ModelOptions mo;
  mo.name = o.model;
  auto model = trainer::make_model(mo, 1);
  const auto shapes = model->gemm_shapes(static_cast<int>(o.batch));
  trainer::Dataset data = synthetic_dataset(model->input_shape(), o.batch * 8, 7);

  trainer::TrainerOptions to;
  to.batch = o.batch;
  to.schedule.base_lr = 0.01f;
  to.optimizer.weight_decay = 5e-4f;
  trainer::Trainer t(std::move(model), data, to);

  std::vector<GemmBuffers> bufs(shapes.size());
  trainer::Rng rng(3);
  TrainerBenchResult r;
  r.threads = threads;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& g = shapes[i];
    bufs[i].a.resize(static_cast<size_t>(g.m) * g.k);
    bufs[i].b.resize(static_cast<size_t>(g.k) * g.n);
    bufs[i].c.resize(static_cast<size_t>(g.m) * g.n);
    for (auto* v : {&bufs[i].a, &bufs[i].b}) {
      for (auto& x : *v) x = static_cast<float>(rng.normal());
    }
    r.gemm_flops_per_step += g.flops();
  }

  auto train_steps = [&](int n) {
    for (int s = 0; s < n; ++s) {
      auto idx = t.sampler().next_batch(o.batch);
      if (idx.size() < o.batch) {
        t.sampler().start_epoch(0);
        idx = t.sampler().next_batch(o.batch);
      }
      t.train_step(idx);
    }
  };
  auto gemm_steps = [&](int n) {
    for (int s = 0; s < n; ++s) {
      for (size_t i = 0; i < shapes.size(); ++i) run_gemm(shapes[i], bufs[i]);
    }
  };

  train_steps(3);  // warm-up: buffers sized, caches and BLAS threads up
  gemm_steps(3);
  std::vector<double> step_times, gemm_times;
  for (int trial = 0; trial < o.trials; ++trial) {
    auto t0 = Clock::now();
    train_steps(o.steps);
    auto t1 = Clock::now();
    gemm_steps(o.steps);
    auto t2 = Clock::now();
    step_times.push_back(std::chrono::duration<double>(t1 - t0).count() / o.steps);
    gemm_times.push_back(std::chrono::duration<double>(t2 - t1).count() / o.steps);
  }
  r.step_seconds = median(step_times);
  r.sgemm_seconds = median(gemm_times);
  return r;
}

}  // namespace gossipd::daemon
