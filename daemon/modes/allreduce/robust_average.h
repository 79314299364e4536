#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "daemon/worker/robust_report.h"
#include "daemon/worker/training_loop.h"
#include "protocol/collectives/group.h"
#include "protocol/gossip/robust_group_mean.h"
#include "protocol/robust/attack.h"

namespace gossipd::daemon {

// AllReduce-SGD's --robust clip: BTARD's aggregation (Gorbunov et al., ICML
// 2022) in place of the sum (protocol::RobustGroupMean): each member
// gathers every member's copy of its block, aggregates the copies with
// CenteredClip, and an allgather hands every member every block with its
// owner's verdicts on the copies. Each block is aggregated once, by its
// owner, so the replicas stay bit-identical; every member owns a block and
// sees every member's copy of it, and every member tallies every owner's
// verdicts, so every honest member judges every other one on all its blocks.
//
// What the members send is their own momentum, m_i ← μ·m_i + g_i with the
// optimizer's μ (Karimireddy, He and Jaggi, ICML 2021: "learning from
// history"), not the step's gradient: honest momenta differ by noise
// averaged over about 1/(1 − μ) steps, so τ shrinks against the signal
// and an attacker that stays near τ (a stale replay) moves the model that
// much less and stands out. The aggregate M_t is then handed to the
// optimizer as M_t − μ·M_{t−1}, whose momentum rebuilds M_t: with no copy
// clipped this is plain SGD with momentum (to float rounding). Both
// buffers restart at zero after a re-synchronisation (restart()), where
// the optimizer's own velocity carries the history on. A host's optimizer
// (gossipd.torch) or μ = 0: the gradients themselves are sent.
//
// BTARD's verification of the owners is not built: a Byzantine member
// aggregates its own block as it pleases (1/n of the update), which
// --inject-byzantine does not model (its attacker aggregates honestly and
// attacks the copies it sends).
class RobustAverage {
 public:
  // `momentum`: the optimizer's μ (0: send the gradients).
  RobustAverage(protocol::ClipSpec spec, RobustReport report, float momentum)
      : mean_(spec), report_(std::move(report)), momentum_(momentum) {}

  // grads ← what the optimizer applies for step `round`: the robust
  // average over `group` (above). `attack` (--inject-byzantine) changes
  // what this member sends. The exchanges' time counts as `loop`'s
  // communication.
  void run(protocol::Group& group, std::span<float> grads, protocol::SegmentAttack* attack,
           TrainingLoop& loop, uint64_t round);
  // After the replicas re-synchronised: the momenta start again from zero.
  void restart();

 private:
  // What this member sends: its momentum (or gradients), attacked or not.
  std::span<const float> outgoing(std::span<const float> grads, protocol::SegmentAttack* attack,
                                  uint64_t round);

  protocol::RobustGroupMean mean_;
  RobustReport report_;
  float momentum_;
  std::vector<float> own_;       // m_i
  std::vector<float> previous_;  // M_{t-1}, the same on every replica
  std::vector<float> average_;   // M_t
};

}  // namespace gossipd::daemon
