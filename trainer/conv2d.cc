#include "trainer/conv2d.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "trainer/sgemm.h"

namespace gossipd::trainer {

Conv2D::Conv2D(Shape in, int out_channels, int kernel, int stride, Padding padding)
    : in_(in), kernel_(kernel), stride_(stride), padding_(padding) {
  if (kernel < 1 || stride < 1 || padding.rows < 0 || padding.cols < 0) {
    throw std::invalid_argument("conv2d: bad geometry");
  }
  out_shape_.height = (in.height + 2 * padding.rows - kernel) / stride + 1;
  out_shape_.width = (in.width + 2 * padding.cols - kernel) / stride + 1;
  out_shape_.channels = out_channels;
  if (out_shape_.height < 1 || out_shape_.width < 1) {
    throw std::invalid_argument("conv2d: kernel larger than the padded input");
  }
}

size_t Conv2D::param_count() const {
  return static_cast<size_t>(out_shape_.channels) * patch() + out_shape_.channels;
}

void Conv2D::bind(std::span<float> params, std::span<float> grads) {
  assert(params.size() == param_count() && grads.size() == param_count());
  const size_t nw = static_cast<size_t>(out_shape_.channels) * patch();
  w_ = params.data();
  b_ = w_ + nw;
  dw_ = grads.data();
  db_ = dw_ + nw;
}

void Conv2D::init_params(Rng& rng) {
  const double stddev = std::sqrt(2.0 / patch());
  const size_t nw = static_cast<size_t>(out_shape_.channels) * patch();
  for (size_t i = 0; i < nw; ++i) w_[i] = static_cast<float>(rng.normal() * stddev);
  std::memset(b_, 0, sizeof(float) * out_shape_.channels);
}

void Conv2D::im2col(const float* in, int batch) {
  const int c = in_.channels;
  const size_t row_len = static_cast<size_t>(patch());
  cols_.resize(static_cast<size_t>(batch) * out_shape_.height * out_shape_.width * row_len);
  cols_in_ = in;
  cols_batch_ = batch;
  float* row = cols_.data();
  for (int n = 0; n < batch; ++n) {
    const float* img = in + static_cast<size_t>(n) * in_.size();
    for (int oy = 0; oy < out_shape_.height; ++oy) {
      for (int ox = 0; ox < out_shape_.width; ++ox, row += row_len) {
        float* dst = row;
        for (int ky = 0; ky < kernel_; ++ky) {
          const int iy = oy * stride_ - padding_.rows + ky;
          for (int kx = 0; kx < kernel_; ++kx, dst += c) {
            const int ix = ox * stride_ - padding_.cols + kx;
            if (iy < 0 || iy >= in_.height || ix < 0 || ix >= in_.width) {
              std::memset(dst, 0, sizeof(float) * c);
            } else {
              std::memcpy(dst, img + (static_cast<size_t>(iy) * in_.width + ix) * c, sizeof(float) * c);
            }
          }
        }
      }
    }
  }
}

void Conv2D::col2im(float* din, int batch) const {
  const int c = in_.channels;
  const size_t row_len = static_cast<size_t>(patch());
  std::memset(din, 0, sizeof(float) * in_.size() * batch);
  const float* row = dcols_.data();
  for (int n = 0; n < batch; ++n) {
    float* img = din + static_cast<size_t>(n) * in_.size();
    for (int oy = 0; oy < out_shape_.height; ++oy) {
      for (int ox = 0; ox < out_shape_.width; ++ox, row += row_len) {
        const float* src = row;
        for (int ky = 0; ky < kernel_; ++ky) {
          const int iy = oy * stride_ - padding_.rows + ky;
          for (int kx = 0; kx < kernel_; ++kx, src += c) {
            const int ix = ox * stride_ - padding_.cols + kx;
            if (iy < 0 || iy >= in_.height || ix < 0 || ix >= in_.width) continue;
            float* dst = img + (static_cast<size_t>(iy) * in_.width + ix) * c;
            for (int ch = 0; ch < c; ++ch) dst[ch] += src[ch];
          }
        }
      }
    }
  }
}

void Conv2D::forward(const float* in, float* out, int batch) {
  im2col(in, batch);
  const int rows = batch * out_shape_.height * out_shape_.width;
  const int co = out_shape_.channels;
  for (int r = 0; r < rows; ++r) std::memcpy(out + static_cast<size_t>(r) * co, b_, sizeof(float) * co);
  // Y[rows, co] = cols[rows, patch] * W^T[patch, co]
  sgemm(CblasNoTrans, CblasTrans, rows, co, patch(), 1.0f, cols_.data(), patch(), w_, patch(), 1.0f, out, co);
}

void Conv2D::backward(const float* in, const float* out, const float* dout, float* din, int batch) {
  backward_weights(in, dout, batch);
  backward_input(in, out, dout, din, batch);
}

void Conv2D::backward_weights(const float* in, const float* dout, int batch) {
  if (in != nullptr && (in != cols_in_ || batch != cols_batch_)) im2col(in, batch);
  const int rows = batch * out_shape_.height * out_shape_.width;
  const int co = out_shape_.channels;
  // dW[co, patch] = dY^T[co, rows] * cols[rows, patch]
  sgemm(CblasTrans, CblasNoTrans, co, patch(), rows, 1.0f, dout, co, cols_.data(), patch(),
        accumulate_ ? 1.0f : 0.0f, dw_, patch());
  if (!accumulate_) std::memset(db_, 0, sizeof(float) * co);
  for (int r = 0; r < rows; ++r) {
    const float* g = dout + static_cast<size_t>(r) * co;
    for (int j = 0; j < co; ++j) db_[j] += g[j];
  }
}

void Conv2D::backward_input(const float*, const float*, const float* dout, float* din, int batch) {
  if (din == nullptr) return;
  const int rows = batch * out_shape_.height * out_shape_.width;
  const int co = out_shape_.channels;
  dcols_.resize(static_cast<size_t>(rows) * static_cast<size_t>(patch()));
  // dcols[rows, patch] = dY[rows, co] * W[co, patch]
  sgemm(CblasNoTrans, CblasNoTrans, rows, patch(), co, 1.0f, dout, co, w_, patch(), 0.0f, dcols_.data(),
        patch());
  col2im(din, batch);
}

void Conv2D::append_gemms(int batch, bool input_grad, std::vector<GemmShape>& out) const {
  const int rows = batch * out_shape_.height * out_shape_.width;
  const int co = out_shape_.channels;
  out.push_back({rows, co, patch(), false, true});
  out.push_back({co, patch(), rows, true, false});
  if (input_grad) out.push_back({rows, patch(), co, false, false});
}

}  // namespace gossipd::trainer
