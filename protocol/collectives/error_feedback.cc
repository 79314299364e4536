#include "protocol/collectives/error_feedback.h"

#include <memory>

namespace gossipd::protocol {

std::span<float> ErrorFeedback::residual(size_t offset, size_t count) {
  if (residual_.size() < offset + count) residual_.resize(offset + count, 0.0f);
  return std::span<float>(residual_).subspan(offset, count);
}

EncodedSegment ErrorFeedback::encode(size_t offset, std::span<const float> x) {
  EncodedSegment out;
  out.spec = spec_;
  out.count = x.size();
  const std::span<const float> carry = spec_.lossless() ? std::span<float>() : residual(offset, x.size());
  out.bytes = std::make_shared<const std::vector<std::byte>>(protocol::encode(spec_, x, carry));
  return out;
}

void ErrorFeedback::scale(size_t offset, size_t count, float factor) {
  if (residual_.size() < offset + count) return;  // nothing owed there yet
  for (float& e : std::span<float>(residual_).subspan(offset, count)) e *= factor;
}

void ErrorFeedback::sent(size_t offset, std::span<const float> x, const EncodedSegment& data) {
  if (spec_.lossless()) return;
  std::vector<float> got(x.size());
  decode(spec_, *data.bytes, got);  // our own bytes: always decodable
  auto e = residual(offset, x.size());
  for (size_t i = 0; i < x.size(); ++i) e[i] = x[i] + e[i] - got[i];
}

}  // namespace gossipd::protocol
