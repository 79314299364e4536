#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/collectives/segment_table.h"
#include "trainer/dataset.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// Where this process stands when a run sets it up.
struct Placement {
  size_t rank = 0;       // among the initial members (sorted ids)
  size_t members = 1;    // initial members
  bool joining = false;  // entering a running cluster
};

// What a checkpoint of this process holds: `name` goes in its header
// (StateHeader.layout; empty = the whole model and the trainer's optimizer
// state), and how many floats of each.
struct StateLayout {
  std::string name;
  size_t params = 0;
  size_t optimizer = 0;
};

class TrainedReplica;

// What one process trains, as its mode loaded it: the run scaffold asks it
// for the segments to register, the parameters and round at the end, and
// the line --check-config prints.
class Replica {
 public:
  virtual ~Replica() = default;
  // The parameters' segments (the transport registers them; a join's state
  // follows them); empty: none.
  virtual const protocol::SegmentTable& segments() const = 0;
  // This process's parameters, as --params-out writes and param_hash names them.
  virtual std::vector<float> params() const = 0;
  // Training rounds (steps) done.
  virtual uint64_t round() const = 0;
  // Samples in the training set this process reads.
  virtual size_t train_samples() const = 0;
  // --check-config's description after the mode's name: "N parameters in S
  // segments, T training samples".
  virtual std::string config_summary() const = 0;
  // The replica a trainer::Trainer trains (joins, checkpoints and the
  // training loop need one); nullptr for a mode of another kind.
  virtual TrainedReplica* trained() { return nullptr; }
  const TrainedReplica* trained() const { return const_cast<Replica*>(this)->trained(); }
};

// A trainer::Trainer over the training set, the test set it is evaluated
// on, and its segments: what every mode but the sparse one trains.
class TrainedReplica : public Replica {
 public:
  TrainedReplica(trainer::Dataset train, trainer::Dataset test, std::unique_ptr<trainer::Model> model,
                 const trainer::TrainerOptions& options, protocol::SegmentTable segments);
  TrainedReplica(const TrainedReplica&) = delete;  // the trainer reads train_ where it is
  TrainedReplica& operator=(const TrainedReplica&) = delete;

  const protocol::SegmentTable& segments() const override { return segments_; }
  std::vector<float> params() const override;
  uint64_t round() const override { return trainer_->step_count(); }
  size_t train_samples() const override { return train_.size(); }
  std::string config_summary() const override;
  TrainedReplica* trained() override { return this; }

  trainer::Trainer& trainer() { return *trainer_; }
  const trainer::Trainer& trainer() const { return *trainer_; }
  const trainer::Dataset& train() const { return train_; }
  // Poisoned data (--inject-byzantine label_flip): every training label y
  // becomes classes − 1 − y, where the trainer reads it.
  void flip_labels();
  const trainer::Dataset& test() const { return test_; }

 private:
  trainer::Dataset train_;  // before the trainer, which reads it
  trainer::Dataset test_;
  protocol::SegmentTable segments_;
  std::unique_ptr<trainer::Trainer> trainer_;
};

}  // namespace gossipd::daemon
