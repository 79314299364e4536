#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace gossipd::trainer {

// Floats that copies share: a data set's pixels, loaded once and read by
// every trainer of a process (gossipctl simulate's members) instead of one
// copy each. Used like a vector; writing to one that is shared copies it
// first (copy on write), so a copy never sees another's writes.
class SharedFloats {
 public:
  SharedFloats() = default;
  SharedFloats(std::vector<float> values)  // NOLINT: a vector is what it holds
      : p_(std::make_shared<std::vector<float>>(std::move(values))) {}

  size_t size() const { return p_ ? p_->size() : 0; }
  bool empty() const { return size() == 0; }
  const float* data() const { return p_ ? p_->data() : nullptr; }
  const float* begin() const { return data(); }
  const float* end() const { return data() + size(); }
  float operator[](size_t i) const { return (*p_)[i]; }

  float* data() { return own().data(); }
  float* begin() { return data(); }
  float* end() { return data() + size(); }
  float& operator[](size_t i) { return own()[i]; }
  void assign(size_t n, float v) { p_ = std::make_shared<std::vector<float>>(n, v); }
  template <class It>
  void assign(It first, It last) {
    p_ = std::make_shared<std::vector<float>>(first, last);
  }
  void resize(size_t n, float v = 0.0f) { own().resize(n, v); }

  // Whether the two hold the same floats in memory (not merely equal ones).
  bool shares_with(const SharedFloats& other) const { return p_ && p_ == other.p_; }

  friend bool operator==(const SharedFloats& a, const SharedFloats& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SharedFloats& a, const std::vector<float>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::vector<float>& own() {
    if (!p_) {
      p_ = std::make_shared<std::vector<float>>();
    } else if (p_.use_count() > 1) {
      p_ = std::make_shared<std::vector<float>>(*p_);
    }
    return *p_;
  }

  std::shared_ptr<std::vector<float>> p_;
};

}  // namespace gossipd::trainer
