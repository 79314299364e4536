#include "trainer/dense.h"

#include <cassert>
#include <cmath>
#include <cstring>

#include "trainer/sgemm.h"

namespace gossipd::trainer {

Dense::Dense(int in, int out) : in_(in), out_(out) {}

size_t Dense::param_count() const { return static_cast<size_t>(in_) * out_ + out_; }

void Dense::bind(std::span<float> params, std::span<float> grads) {
  assert(params.size() == param_count() && grads.size() == param_count());
  w_ = params.data();
  b_ = w_ + static_cast<size_t>(in_) * out_;
  dw_ = grads.data();
  db_ = dw_ + static_cast<size_t>(in_) * out_;
}

void Dense::init_params(Rng& rng) {
  const double stddev = std::sqrt(2.0 / in_);  // He initialisation for ReLU nets
  for (size_t i = 0; i < static_cast<size_t>(in_) * out_; ++i) {
    w_[i] = static_cast<float>(rng.normal() * stddev);
  }
  std::memset(b_, 0, sizeof(float) * out_);
}

void Dense::forward(const float* in, float* out, int batch) {
  for (int r = 0; r < batch; ++r) std::memcpy(out + static_cast<size_t>(r) * out_, b_, sizeof(float) * out_);
  sgemm(CblasNoTrans, CblasTrans, batch, out_, in_, 1.0f, in, in_, w_, in_, 1.0f, out, out_);
}

void Dense::backward(const float* in, const float* out, const float* dout, float* din, int batch) {
  backward_weights(in, dout, batch);
  backward_input(in, out, dout, din, batch);
}

void Dense::backward_weights(const float* in, const float* dout, int batch) {
  // dW[out, in] = dY^T[out, batch] * X[batch, in]
  sgemm(CblasTrans, CblasNoTrans, out_, in_, batch, 1.0f, dout, out_, in, in_, accumulate_ ? 1.0f : 0.0f, dw_,
        in_);
  if (!accumulate_) std::memset(db_, 0, sizeof(float) * out_);
  for (int r = 0; r < batch; ++r) {
    const float* row = dout + static_cast<size_t>(r) * out_;
    for (int j = 0; j < out_; ++j) db_[j] += row[j];
  }
}

void Dense::backward_input(const float*, const float*, const float* dout, float* din, int batch) {
  if (din != nullptr) {
    // dX[batch, in] = dY[batch, out] * W[out, in]
    sgemm(CblasNoTrans, CblasNoTrans, batch, in_, out_, 1.0f, dout, out_, w_, in_, 0.0f, din, in_);
  }
}

void Dense::append_gemms(int batch, bool input_grad, std::vector<GemmShape>& out) const {
  out.push_back({batch, out_, in_, false, true});
  out.push_back({out_, in_, batch, true, false});
  if (input_grad) out.push_back({batch, in_, out_, false, false});
}

}  // namespace gossipd::trainer
