#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/config/cli.h"
#include "daemon/member/member.h"
#include "protocol/wire/errors.h"

// How a member enters the cluster: through a join, or as one of the members
// started together (from round 0 or from its checkpoint).
namespace gossipd::daemon {

void Member::enter(std::stop_token stop) {
  steps_ = mode_.steps_per_epoch(o_, replica_->train_samples(), members_.size(), o_.train.batch);
  epochs_ = o_.train.epochs;
  topology_seed_ = o_.train.seed;
  std::optional<JoinResult> joined;
  if (joining_) joined = join(stop);
  if (joined) {
    adopt(*joined, stop);
  } else {
    start_or_resume();
  }
}

// Downloads the state from a live member. nullopt when nobody answered and
// --bootstrap makes this worker the first member instead.
std::optional<JoinResult> Member::join(std::stop_token stop) {
  trainer::Trainer& trainer = trained().trainer();
  // The model it starts from, evaluated while the cluster trains on: a
  // joiner that starts near the others shows it.
  auto evaluate_download = [&](const ReplicaState& st) {
    auto params = trainer.model().params();
    mode_.model_in_state(st, replica_->segments(), params);
    events_.downloaded(st.header.step(), trainer.evaluate(trained().test()).accuracy);
    std::copy(st.params.begin(), st.params.end(), params.begin());
  };
  try {
    return join_cluster(*node_, o_.join, mine_, trainer.optimizer().state().size(),
                        std::chrono::milliseconds(o_.startup_timeout_ms), o_.join_donors, stop,
                        evaluate_download);
  } catch (const NoMemberAnswered& e) {
    if (!o_.bootstrap) throw;
    // The first member of a new cluster: its own shard is all the data.
    spdlog::warn("node '{}': {}; starting as the first member (--bootstrap)", o_.id, e.what());
    node_->validator().set_open_types({proto::HELLO, proto::REUNION});
    joining_ = false;
    return std::nullopt;
  } catch (const JoinRefused& e) {
    throw UsageError(e.what());
  }
}

// A joiner takes the contact's schedule, optimizer state and round, and
// waits until the cluster is about to reach that round.
void Member::adopt(const JoinResult& joined, std::stop_token stop) {
  trainer::Trainer& trainer = trained().trainer();
  const proto::StateHeader& h = joined.state.header;
  std::copy(joined.state.optimizer.begin(), joined.state.optimizer.end(),
            trainer.optimizer().state().begin());
  trainer.set_step_count(joined.since_round - 1);  // its first round is the one it was admitted at
  steps_ = std::max<uint64_t>(1, h.steps_per_epoch());
  epochs_ = static_cast<int>(h.epochs());
  topology_seed_ = joined.topology_seed;
  entered_from_ = h;
  state_.update([&](proto::Status& s) {
    proto::JoinRecord* j = s.mutable_joined();
    j->set_contact(joined.contact);
    for (const auto& d : joined.donors) j->add_donors(d);
    j->set_shares_reasked(joined.shares_reasked);
    j->set_shares_taken_over(joined.shares_taken_over);
    j->set_download_ms(joined.download_ms);
    j->set_snapshot_wait_ms(joined.snapshot_wait_ms);
    j->set_join_ms(joined.join_ms);
    j->set_answer_ms(joined.answer_ms);
    j->set_state_step(h.step());
    j->set_since_round(joined.since_round);
  });
  events_.joined(joined.contact, joined.since_round, steps_ * static_cast<uint64_t>(epochs_),
                 (joined.since_round - 1) / steps_ + 1);
  if (resume_) events_.left_checkpoint(resume_->state.header.step());
  membership_ = std::make_unique<Membership>(*node_, self_, joined.admitted, membership_options_,
                                             status_delegate_, metrics_);
  sleep_unless_stopped(joined.start_at - std::chrono::steady_clock::now(), stop);
  if (stop.stop_requested()) throw protocol::Aborted(o_.id, "waiting for the round it enters at");
}

void Member::start_or_resume() {
  membership_ =
      std::make_unique<Membership>(*node_, self_, peers_, membership_options_, status_delegate_, metrics_);
  if (!resume_) return;
  trainer::Trainer& trainer = trained().trainer();
  const proto::StateHeader& h = resume_->state.header;
  // A share of the replica is its worker's to restore (WorkerContext::resume_state).
  if (h.layout().empty()) {
    std::copy(resume_->state.params.begin(), resume_->state.params.end(), trainer.model().params().begin());
    std::copy(resume_->state.optimizer.begin(), resume_->state.optimizer.end(),
              trainer.optimizer().state().begin());
  }
  trainer.set_step_count(h.step());
  entered_from_ = h;
  events_.resumed(h.step(), h.epoch(), resume_->test_accuracy);
}

}  // namespace gossipd::daemon
