#pragma once

#include <cstdint>
#include <string>

#include "protocol/collectives/group.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// What every member of a data-parallel cluster must share for its rounds to
// mean anything: the parameters' and the optimizer state's sizes and the
// segments' lengths. Members with static peers compare it right after the
// startup barrier (a joiner's HELLO is compared by JoinPolicy instead).
struct ModelLayout {
  uint64_t params = 0;
  uint64_t state = 0;
  uint64_t segments = 0;     // how many
  uint64_t fingerprint = 0;  // of their lengths, 48 bits
  static ModelLayout of(trainer::Trainer& trainer);
  bool operator==(const ModelLayout&) const = default;
  std::string describe() const;
};

// Allgathers every member's layout; throws UsageError naming the first
// member whose layout is not this member's (every member throws alike: none
// of them trains on).
void agree_on_layout(protocol::Group& group, trainer::Trainer& trainer);

}  // namespace gossipd::daemon
