#include "trainer/gemm_set.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>

#include "trainer/rng.h"

namespace gossipd::trainer {

GemmSet::GemmSet(std::vector<GemmShape> shapes, uint64_t seed) : shapes_(std::move(shapes)) {
  Rng rng(seed);
  for (const GemmShape& g : shapes_) {
    Buffers& b = buffers_.emplace_back();
    b.a.resize(static_cast<size_t>(g.m) * g.k);
    b.b.resize(static_cast<size_t>(g.k) * g.n);
    b.c.resize(static_cast<size_t>(g.m) * g.n);
    for (auto* v : {&b.a, &b.b}) {
      for (auto& x : *v) x = static_cast<float>(rng.normal());
    }
    flops_ += g.flops();
  }
}

void GemmSet::run() {
  for (size_t i = 0; i < shapes_.size(); ++i) {
    const GemmShape& g = shapes_[i];
    Buffers& b = buffers_[i];
    const int lda = g.trans_a ? g.m : g.k;
    const int ldb = g.trans_b ? g.k : g.n;
    cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
                g.m, g.n, g.k, 1.0f, b.a.data(), lda, b.b.data(), ldb, 0.0f, b.c.data(), g.n);
  }
}

double sgemm_flops_per_s(const std::vector<GemmShape>& shapes, int trials) {
  GemmSet set(shapes);
  set.run();
  double best = 0;
  for (int t = 0; t < trials; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    set.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, set.flops() / s);
  }
  return best;
}

}  // namespace gossipd::trainer
