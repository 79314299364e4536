#include "daemon/worker/same_layout.h"

#include <algorithm>
#include <vector>

#include "daemon/config/cli.h"
#include "daemon/worker/round_floats.h"
#include "protocol/collectives/ring.h"

namespace gossipd::daemon {
namespace {

constexpr size_t kFloats = 8;  // four values of 48 bits, two floats each (round_floats.h)
constexpr uint64_t kLow48 = (uint64_t{1} << 48) - 1;

uint64_t fnv1a(const std::vector<trainer::ParamSegment>& segments) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& s : segments) {
    for (int byte = 0; byte < 8; ++byte) {
      h ^= (static_cast<uint64_t>(s.length) >> (8 * byte)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h & kLow48;
}

}  // namespace

ModelLayout ModelLayout::of(trainer::Trainer& trainer) {
  const auto& segments = trainer.model().segments();
  return {trainer.model().params().size(), trainer.optimizer().state().size(), segments.size(),
          fnv1a(segments)};
}

std::string ModelLayout::describe() const {
  return std::to_string(params) + " parameters in " + std::to_string(segments) + " segments, " +
         std::to_string(state) + " optimizer floats";
}

void agree_on_layout(protocol::Group& group, trainer::Trainer& trainer) {
  const ModelLayout mine = ModelLayout::of(trainer);
  std::vector<float> all(kFloats * group.size(), 0.0f);
  const uint64_t values[] = {mine.params, mine.state, mine.segments, mine.fingerprint};
  for (size_t v = 0; v < 4; ++v) {
    const auto f = round_to_floats(values[v] & kLow48);
    std::copy(f.begin(), f.end(), all.begin() + static_cast<std::ptrdiff_t>(kFloats * group.rank() + 2 * v));
  }
  protocol::AllgatherRing(group, all).run();
  for (size_t r = 0; r < group.size(); ++r) {
    const float* f = &all[kFloats * r];
    const ModelLayout theirs{round_from_floats(f), round_from_floats(f + 2), round_from_floats(f + 4),
                             round_from_floats(f + 6)};
    if (theirs == mine) continue;
    const std::string same_counts =
        theirs.params == mine.params && theirs.segments == mine.segments && theirs.state == mine.state
            ? " (segments of other lengths)"
            : "";
    throw UsageError("member '" + group.member(r) + "' trains a model of another layout: " +
                     theirs.describe() + same_counts + ", this member " + mine.describe() +
                     ": every member needs the same model, optimizer and segments");
  }
}

}  // namespace gossipd::daemon
