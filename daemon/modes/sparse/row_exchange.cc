#include "daemon/modes/sparse/row_exchange.h"

#include <algorithm>

namespace gossipd::daemon {

void RowExchange::send(const Lists& rows, uint64_t seq, const float* y, size_t stride, size_t count) {
  wait_sent();
  for (size_t t = 0; t < rows.size(); ++t) {
    if (rows[t].empty()) continue;
    const auto pack = [&](float* to) {
      for (size_t k = 0; k < rows[t].size(); ++k)
        std::copy_n(y + size_t{rows[t][k]} * stride, count, to + k * count);
    };
    sent_.push_back(stream_.send_filled(t, seq, rows[t].size() * count, pack));
  }
}

void RowExchange::receive(const Lists& rows, uint64_t seq, float* y, size_t stride, size_t count, bool add) {
  for (size_t q = 0; q < rows.size(); ++q) {
    if (rows[q].empty()) continue;
    const auto unpack = [&](const float* in) {
      for (size_t k = 0; k < rows[q].size(); ++k) {
        const float* from = in + k * count;
        float* to = y + size_t{rows[q][k]} * stride;
        if (add) {
          for (size_t t = 0; t < count; ++t) to[t] += from[t];
        } else {
          std::copy_n(from, count, to);
        }
      }
    };
    stream_.recv_used(q, seq, rows[q].size() * count, unpack);
  }
}

void RowExchange::connect() { stream_.share_memory(); }

void RowExchange::wait_sent() {
  for (const auto& h : sent_) stream_.wait(h);
  sent_.clear();
}

}  // namespace gossipd::daemon
