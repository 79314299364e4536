#include "daemon/sparse/row_exchange.h"

#include <algorithm>

namespace gossipd::daemon {

void RowExchange::send(const Lists& rows, uint64_t seq, const float* y, size_t stride, size_t count) {
  wait_sent();
  for (size_t t = 0; t < rows.size(); ++t) {
    if (rows[t].empty()) continue;
    std::vector<float>& buf = out_[t];
    buf.resize(rows[t].size() * count);
    for (size_t k = 0; k < rows[t].size(); ++k)
      std::copy_n(y + size_t{rows[t][k]} * stride, count, buf.data() + k * count);
    sent_.push_back(stream_.send(t, seq, buf));
  }
}

void RowExchange::receive(const Lists& rows, uint64_t seq, float* y, size_t stride, size_t count, bool add) {
  for (size_t q = 0; q < rows.size(); ++q) {
    if (rows[q].empty()) continue;
    in_.resize(rows[q].size() * count);
    stream_.recv(q, seq, in_);
    for (size_t k = 0; k < rows[q].size(); ++k) {
      const float* from = in_.data() + k * count;
      float* to = y + size_t{rows[q][k]} * stride;
      if (add) {
        for (size_t t = 0; t < count; ++t) to[t] += from[t];
      } else {
        std::copy_n(from, count, to);
      }
    }
  }
}

void RowExchange::wait_sent() {
  for (const auto& h : sent_) stream_.wait(h);
  sent_.clear();
}

}  // namespace gossipd::daemon
