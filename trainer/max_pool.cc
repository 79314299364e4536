#include "trainer/max_pool.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace gossipd::trainer {
namespace {

// Per channel, where v beats the running maximum, takes it and its index.
// Selects on unaliased arrays, which the compiler vectorises: a branch here
// mispredicts on about half of the elements (which one wins is data).
void take_larger(const float* __restrict v, float* __restrict best, uint32_t* __restrict arg, uint32_t at,
                 int c) {
  for (int ch = 0; ch < c; ++ch) {
    const float x = v[ch], y = best[ch];
    const uint32_t take = 0u - static_cast<uint32_t>(x > y);  // all ones where x wins
    best[ch] = std::max(y, x);                                // (y < x) ? x : y
    arg[ch] = (arg[ch] & ~take) | ((at + static_cast<uint32_t>(ch)) & take);
  }
}

}  // namespace

MaxPool2D::MaxPool2D(Shape in, int size) : in_(in), size_(size) {
  if (size < 1 || in.height < size || in.width < size) {
    throw std::invalid_argument("maxpool: window larger than the input");
  }
  out_ = Shape{in.height / size, in.width / size, in.channels};
}

void MaxPool2D::pool(const float* img, float* o, uint32_t* am) const {
  const int c = in_.channels;
  float* best = best_.data();
  for (int oy = 0; oy < out_.height; ++oy) {
    for (int ox = 0; ox < out_.width; ++ox) {
      const size_t obase = (static_cast<size_t>(oy) * out_.width + ox) * c;
      // Start from the window's first element so argmax is set even for NaN input.
      const size_t first = (static_cast<size_t>(oy * size_) * in_.width + ox * size_) * c;
      for (int ch = 0; ch < c; ++ch) {
        best[ch] = img[first + ch];
        am[obase + ch] = static_cast<uint32_t>(first + ch);
      }
      for (int ky = 0; ky < size_; ++ky) {
        for (int kx = 0; kx < size_; ++kx) {
          const size_t ibase = (static_cast<size_t>(oy * size_ + ky) * in_.width + ox * size_ + kx) * c;
          take_larger(img + ibase, best, am + obase, static_cast<uint32_t>(ibase), c);
        }
      }
      if (o != nullptr) std::memcpy(o + obase, best, sizeof(float) * c);
    }
  }
}

void MaxPool2D::forward(const float* in, float* out, int batch) {
  argmax_.resize(out_.size() * static_cast<size_t>(batch));
  argmax_in_ = in;
  argmax_batch_ = batch;
  best_.resize(static_cast<size_t>(in_.channels));
  for (int n = 0; n < batch; ++n) {
    pool(in + static_cast<size_t>(n) * in_.size(), out + static_cast<size_t>(n) * out_.size(),
         argmax_.data() + static_cast<size_t>(n) * out_.size());
  }
}

void MaxPool2D::backward(const float* in, const float*, const float* dout, float* din, int batch) {
  if (din == nullptr) return;
  std::memset(din, 0, sizeof(float) * in_.size() * batch);
  const bool kept = in == nullptr || (in == argmax_in_ && batch == argmax_batch_);
  found_.resize(out_.size());
  best_.resize(static_cast<size_t>(in_.channels));
  for (int n = 0; n < batch; ++n) {
    const uint32_t* am = argmax_.data() + static_cast<size_t>(n) * out_.size();
    if (!kept) {
      pool(in + static_cast<size_t>(n) * in_.size(), nullptr, found_.data());
      am = found_.data();
    }
    float* d = din + static_cast<size_t>(n) * in_.size();
    const float* g = dout + static_cast<size_t>(n) * out_.size();
    for (size_t i = 0; i < out_.size(); ++i) d[am[i]] += g[i];
  }
}

}  // namespace gossipd::trainer
