#include "daemon/worker/mode.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>

#include "daemon/config/cli.h"
#include "daemon/worker/segments.h"
#include "trainer/models.h"

namespace gossipd::daemon {

std::unique_ptr<trainer::Model> whole_model(const RunOptions& o) {
  return trainer::make_model(model_options(o.train), o.train.seed);
}

StateLayout whole_state(const trainer::Trainer& trainer) {
  return {"", trainer.model().params().size(), trainer.optimizer().state().size()};
}

trainer::SamplerOptions shard_per_member(const RunOptions& o, const Placement& where) {
  trainer::SamplerOptions s = trainer_options(o.train).sampler;
  if (where.joining) {
    s.mode = trainer::SamplingMode::kRandom;
    s.seed = o.train.seed ^ std::hash<std::string>{}(o.id);
  } else {
    s.worker_index = static_cast<int>(where.rank);
    s.worker_count = static_cast<int>(where.members);
  }
  return s;
}

size_t data_parallel_steps(size_t samples, size_t members, size_t batch) {
  const size_t per_member = samples / std::max<size_t>(members, 1);
  return std::max<size_t>(1, per_member / std::max<size_t>(batch, 1));
}

std::optional<size_t> entry_count(const std::string& arg) {
  size_t used = 0, n = 0;
  try {
    n = std::stoul(arg, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != arg.size() || arg[0] == '-' || n == 0) return std::nullopt;
  return n;
}

void Mode::configure(const std::vector<std::string>& args) {
  CLI::App app;
  ModeFlags flags(app);
  flags.set_owner(name());
  add_flags(flags);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError("--algo " + name() + ": " + e.what());
  }
}

EntryLaunch Mode::launch(const std::string&, const std::string&, const EntryContext& c) const {
  EntryLaunch l;
  l.batch = c.batch;
  RunOptions o;
  o.algo = name();
  o.train.batch = c.batch;
  l.steps_per_epoch = steps_per_epoch(o, c.train_samples, c.workers, c.batch);
  return l;
}

void Mode::model_in_state(const ReplicaState& st, const protocol::SegmentTable&,
                          std::span<float> params) const {
  std::copy(st.params.begin(), st.params.end(), params.begin());
}

std::unique_ptr<Replica> Mode::load(const RunOptions& o, const Placement& where) const {
  return load_trained(o, where, whole_model(o), shard_per_member(o, where));
}

size_t Mode::steps_per_epoch(const RunOptions&, size_t samples, size_t members, size_t batch) const {
  return data_parallel_steps(samples, members, batch);
}

std::unique_ptr<trainer::Model> Mode::eval_model(const RunOptions& o) const { return whole_model(o); }

StateLayout Mode::state_layout(const RunOptions&, const Placement&, const Replica& r) const {
  return whole_state(r.trained()->trainer());
}

protocol::SegmentTable checked_segment_table(const RunOptions& o, const trainer::Model& model) {
  const protocol::SegmentTable segments =
      make_segment_table(model.segments(), model.params().size(), o.segments);
  for (size_t s = 0; s < segments.size(); ++s) {
    // Envelope and framing come on top of the floats.
    if (segments[s].length * sizeof(float) + 4096 > o.max_message_bytes) {
      throw UsageError("--max-message-bytes " + std::to_string(o.max_message_bytes) +
                       " is too small for segment " + std::to_string(s) + " (" +
                       std::to_string(segments[s].length * sizeof(float)) +
                       " bytes): every peer's copy of it would be rejected; raise it or use more --segments");
    }
  }
  return segments;
}

std::unique_ptr<Replica> Mode::load_trained(const RunOptions& o, const Placement& where,
                                            std::unique_ptr<trainer::Model> model,
                                            trainer::SamplerOptions sampler) const {
  check_model(o, where.members, *model);  // before the data, so that a refusal is quick
  const protocol::SegmentTable segments = checked_segment_table(o, *model);
  auto [train, test] =
      trainer::load_fashion_mnist_splits(data_dir(o.train), o.train.train_limit, o.train.test_limit);
  trainer::TrainerOptions topts = trainer_options(o.train);
  topts.sampler = sampler;
  return std::make_unique<TrainedReplica>(std::move(train), std::move(test), std::move(model), topts,
                                          segments);
}

}  // namespace gossipd::daemon
