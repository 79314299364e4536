#include "daemon/cmd/run_command.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/join.h"
#include "daemon/cluster/membership.h"
#include "daemon/cmd/join_policy.h"
#include "daemon/cmd/node_setup.h"
#include "daemon/cmd/run_files.h"
#include "daemon/cmd/run_sparse.h"
#include "daemon/config/cli.h"
#include "daemon/observe/http_server.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/modes.h"
#include "daemon/worker/segments.h"
#include "daemon/worker/training_loop.h"
#include "protocol/curve.h"
#include "protocol/errors.h"
#include "protocol/node.h"
#include "trainer/dataset.h"

namespace gossipd::daemon {
namespace {

// gossipd run, phase by phase: each phase sets up what the next one needs,
// and the members are what the phases share. Members are declared in the
// order they are built, so they are torn down in reverse (the HTTP server
// before the state it serves, membership before the node).
class RunCommand {
 public:
  explicit RunCommand(const RunOptions& o) : o_(o), f_(o.train), mode_(find_mode(o.algo)) {}
  int execute();

 private:
  void place();
  void load();
  int report_config() const;
  void open_node();
  void enter();
  std::optional<JoinResult> join();
  void adopt(const JoinResult& joined);
  void start_or_resume();
  std::unique_ptr<Worker> make_worker();
  int finish();
  void fail(const std::exception& e);
  int stopped();

  const RunOptions& o_;
  const TrainFlags& f_;
  const Mode& mode_;
  std::stop_source stop_;
  SignalWatcher signals_{stop_};
  // place()
  std::map<std::string, std::string> peers_;
  std::vector<std::string> members_;  // the initial members, sorted: index = rank
  size_t rank_ = 0;
  bool joining_ = false;
  // load()
  trainer::Dataset train_;
  trainer::Dataset test_;
  std::unique_ptr<trainer::Trainer> trainer_;
  protocol::SegmentTable segments_;
  std::optional<Checkpoint> resume_;
  // open_node()
  std::unique_ptr<JsonLinesWriter> log_;
  std::unique_ptr<protocol::Node> node_;
  proto::Member self_;
  WorkerState state_;
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> http_;
  proto::Hello mine_;
  MembershipOptions membership_options_;
  // enter()
  size_t steps_ = 1;
  int epochs_ = 0;
  uint64_t topology_seed_ = 1;
  std::vector<double> push_sum_weights_;
  std::unique_ptr<Membership> membership_;
  // make_worker()
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<TrainingLoop> loop_;
};

int RunCommand::execute() {
  set_blas_threads(f_.threads);
  check_run_options(o_);
  place();
  load();
  if (o_.check_config) return report_config();
  open_node();
  try {
    enter();
    const std::unique_ptr<Worker> worker = make_worker();
    worker->run(stop_.get_token());
  } catch (const protocol::Aborted&) {
    return stopped();
  } catch (const std::exception& e) {
    fail(e);
    throw;
  }
  return finish();
}

// Who is who: the members listed in --peers (ranks in sorted order), or a
// joiner that learns them from the member it joins.
void RunCommand::place() {
  peers_ = parse_peers(o_.peers);
  peers_.erase(o_.id);
  joining_ = !o_.join.empty();
  if (joining_ && !mode_.accepts_joins)
    throw UsageError("--algo " + o_.algo + " takes no joiners: drop --join");
  if (!o_.checkpoint_dir.empty() && !mode_.state_layout) {
    throw UsageError("--algo " + o_.algo + " writes no checkpoints: drop --checkpoint-dir");
  }
  members_ = {o_.id};
  for (const auto& [id, endpoint] : peers_) members_.push_back(id);
  std::sort(members_.begin(), members_.end());
  rank_ = static_cast<size_t>(std::find(members_.begin(), members_.end(), o_.id) - members_.begin());
}

// The data, the model (or this process's shard of it), the segments, and
// the checkpoint it would resume from.
void RunCommand::load() {
  trainer::TrainerOptions topts = trainer_options(f_);
  topts.sampler = mode_.sampler(o_, Placement{rank_, members_.size(), joining_});
  std::unique_ptr<trainer::Model> model = mode_.model(o_);
  // Before the data, so that a refusal is quick.
  if (mode_.check) mode_.check(o_, members_.size(), *model);
  segments_ = make_segment_table(model->segments(), model->params().size(), o_.segments);
  for (size_t s = 0; s < segments_.size(); ++s) {
    // Envelope and framing come on top of the floats.
    if (segments_[s].length * sizeof(float) + 4096 > o_.max_message_bytes) {
      throw UsageError("--max-message-bytes " + std::to_string(o_.max_message_bytes) +
                       " is too small for segment " + std::to_string(s) + " (" +
                       std::to_string(segments_[s].length * sizeof(float)) +
                       " bytes): every peer's copy of it would be rejected; raise it or use more --segments");
    }
  }
  train_ = trainer::load_fashion_mnist(data_dir(f_), trainer::Split::kTrain);
  test_ = trainer::load_fashion_mnist(data_dir(f_), trainer::Split::kTest);
  if (f_.train_limit > 0) train_ = train_.head(f_.train_limit);
  if (f_.test_limit > 0) test_ = test_.head(f_.test_limit);
  trainer_ = std::make_unique<trainer::Trainer>(std::move(model), train_, topts);
  if (o_.checkpoint_dir.empty()) return;
  const Placement here{rank_, members_.size(), joining_};
  resume_ = find_resume_point(o_, mode_.state_layout(o_, here, *trainer_));
}

int RunCommand::report_config() const {
  if (!o_.curve_secret_key.empty())
    protocol::curve_options_from_files(o_.curve_secret_key, o_.curve_cluster_key);
  std::printf("gossipd run: configuration OK (%s, %zu parameters in %zu segments, %zu training samples%s)\n",
              o_.algo.c_str(), trainer_->model().params().size(), segments_.size(), train_.size(),
              resume_ ? (", resumes at round " + std::to_string(resume_->state.header.step())).c_str() : "");
  return kExitOk;
}

// The transport, /status and /metrics, and the line that says where it listens.
void RunCommand::open_node() {
  log_ = std::make_unique<JsonLinesWriter>(o_.metrics_out);
  protocol::NodeOptions nopts = node_options(o_);
  for (const auto& [id, endpoint] : peers_) nopts.initial_members.push_back(id);
  node_ = std::make_unique<protocol::Node>(nopts);
  node_->validator().set_open_types({proto::HELLO});  // anyone may ask to join
  // Known before any peer's first segment can arrive (a joiner's first round
  // is often already on its way when its worker starts).
  protocol::register_segments(*node_, segments_);
  for (const auto& [id, endpoint] : peers_) node_->add_peer(id, endpoint);
  self_.set_id(o_.id);
  self_.set_endpoint(o_.advertise.empty() ? node_->endpoint() : o_.advertise);
  self_.set_group(o_.group.empty() ? default_group(self_.endpoint()) : o_.group);
  if (o_.advertise.empty() && binds_everything(self_.endpoint())) {
    spdlog::warn("node '{}': listening on {} without --advertise: joiners cannot use this member's endpoint",
                 o_.id, self_.endpoint());
  }
  register_transport_metrics(metrics_, *node_);
  state_.update([&](proto::Status& s) {
    describe_worker(s, o_, *node_);
    if (joining_) s.set_state("joining");
  });
  if (!o_.http.empty())
    http_ = std::make_unique<HttpServer>(o_.http, status_routes(state_, metrics_, *node_));
  std::printf("gossipd run: id %s %s listening on %s", o_.id.c_str(),
              joining_ ? "joining"
                       : ("rank " + std::to_string(rank_) + "/" + std::to_string(members_.size())).c_str(),
              node_->endpoint().c_str());
  if (http_) std::printf(", http on port %u", http_->port());
  std::printf("\n");
  std::fflush(stdout);
  mine_ = describe(o_, self_, *trainer_, segments_);
  membership_options_.heartbeat_interval = std::chrono::milliseconds(o_.heartbeat_ms);
  membership_options_.failure_timeout = std::chrono::milliseconds(o_.failure_timeout_ms);
  membership_options_.join_timeout = std::chrono::milliseconds(o_.startup_timeout_ms);
  membership_options_.state_chunk_bytes =
      std::min<size_t>(membership_options_.state_chunk_bytes, o_.max_message_bytes / 2);
  membership_options_.max_members = o_.max_members;
}

// Into the cluster: through a join, or as one of the members started
// together (from round 0 or from its checkpoint).
void RunCommand::enter() {
  steps_ = mode_.steps_per_epoch(o_, train_.size(), members_.size(), trainer_->options().batch);
  epochs_ = f_.epochs;
  topology_seed_ = f_.seed;
  std::optional<JoinResult> joined;
  if (joining_) joined = join();
  if (joined) {
    adopt(*joined);
  } else {
    start_or_resume();
  }
}

// Downloads the state from a live member. nullopt when nobody answered and
// --bootstrap makes this worker the first member instead.
std::optional<JoinResult> RunCommand::join() {
  // The model it starts from, evaluated while the cluster trains on: a
  // joiner that starts near the others shows it in this line.
  auto evaluate_download = [&](const ReplicaState& st) {
    auto params = trainer_->model().params();
    std::copy(st.params.begin(), st.params.end(), params.begin());
    // SGP sends numerators and weights: the model is their quotient.
    for (size_t s = 0; s < static_cast<size_t>(st.header.push_sum_weights_size()) && s < segments_.size();
         ++s) {
      const float w = static_cast<float>(st.header.push_sum_weights(static_cast<int>(s)));
      for (size_t i = segments_[s].offset; i < segments_[s].offset + segments_[s].length; ++i) params[i] /= w;
    }
    std::printf("gossipd run: %s downloaded the state at round %llu: test accuracy %.4f\n", o_.id.c_str(),
                static_cast<unsigned long long>(st.header.step()), trainer_->evaluate(test_).accuracy);
    std::fflush(stdout);
    std::copy(st.params.begin(), st.params.end(), params.begin());
  };
  try {
    return join_cluster(*node_, o_.join, mine_, trainer_->optimizer().state().size(),
                        std::chrono::milliseconds(o_.startup_timeout_ms), stop_.get_token(),
                        evaluate_download);
  } catch (const NoMemberAnswered& e) {
    if (!o_.bootstrap) throw;
    // The first member of a new cluster: its own shard is all the data.
    spdlog::warn("node '{}': {}; starting as the first member (--bootstrap)", o_.id, e.what());
    node_->validator().set_open_types({proto::HELLO});
    joining_ = false;
    return std::nullopt;
  } catch (const JoinRefused& e) {
    throw UsageError(e.what());
  }
}

// A joiner takes the contact's schedule, optimizer state and round, and
// waits until the cluster is about to reach that round.
void RunCommand::adopt(const JoinResult& joined) {
  const proto::StateHeader& h = joined.state.header;
  std::copy(joined.state.optimizer.begin(), joined.state.optimizer.end(),
            trainer_->optimizer().state().begin());
  trainer_->set_step_count(joined.since_round - 1);  // its first round is the one it was admitted at
  steps_ = std::max<uint64_t>(1, h.steps_per_epoch());
  epochs_ = static_cast<int>(h.epochs());
  topology_seed_ = joined.topology_seed;
  push_sum_weights_.assign(h.push_sum_weights().begin(), h.push_sum_weights().end());
  std::printf("gossipd run: %s joined through %s: enters at round %llu of %llu (epoch %llu)\n", o_.id.c_str(),
              joined.contact.c_str(), static_cast<unsigned long long>(joined.since_round),
              static_cast<unsigned long long>(steps_ * static_cast<uint64_t>(epochs_)),
              static_cast<unsigned long long>((joined.since_round - 1) / steps_ + 1));
  std::fflush(stdout);
  if (resume_) {
    std::printf("gossipd run: %s left its checkpoint of round %llu for the cluster's newer state\n",
                o_.id.c_str(), static_cast<unsigned long long>(resume_->state.header.step()));
    std::fflush(stdout);
  }
  membership_ =
      std::make_unique<Membership>(*node_, self_, joined.admitted, membership_options_, state_, metrics_);
  sleep_unless_stopped(joined.start_at - std::chrono::steady_clock::now(), stop_.get_token());
  if (stop_.stop_requested()) throw protocol::Aborted(o_.id, "waiting for the round it enters at");
}

void RunCommand::start_or_resume() {
  membership_ = std::make_unique<Membership>(*node_, self_, peers_, membership_options_, state_, metrics_);
  if (!resume_) return;
  const proto::StateHeader& h = resume_->state.header;
  // A share of the replica is its worker's to restore (WorkerContext::resume_state).
  if (h.layout().empty()) {
    std::copy(resume_->state.params.begin(), resume_->state.params.end(), trainer_->model().params().begin());
    std::copy(resume_->state.optimizer.begin(), resume_->state.optimizer.end(),
              trainer_->optimizer().state().begin());
  }
  trainer_->set_step_count(h.step());
  push_sum_weights_.assign(h.push_sum_weights().begin(), h.push_sum_weights().end());
  std::printf("gossipd run: %s resumes from its checkpoint of round %llu (epoch %u, test accuracy %.4f)\n",
              o_.id.c_str(), static_cast<unsigned long long>(h.step()), h.epoch(), resume_->test_accuracy);
  std::fflush(stdout);
}

// The checkpointer, the training loop and the mode's worker; from here on
// the cluster may admit joiners through this member.
std::unique_ptr<Worker> RunCommand::make_worker() {
  if (!o_.checkpoint_dir.empty()) {
    CheckpointOptions copts{o_.checkpoint_dir, o_.checkpoint_every, o_.checkpoint_keep};
    checkpointer_ = std::make_unique<Checkpointer>(copts, o_.id, [this](Checkpoint& c) {
      c.view = membership_->members();
      c.test_accuracy = state_.snapshot().test_accuracy();
    });
  }
  // Evaluations run in the background on a model of the same shape.
  loop_ = std::make_unique<TrainingLoop>(o_.id, *trainer_, test_, state_, metrics_, *log_, epochs_, o_.quiet,
                                         o_.evals_per_epoch, mode_.model(o_));
  proto::StateHeader header;
  header.set_steps_per_epoch(steps_);
  header.set_epochs(static_cast<uint32_t>(epochs_));
  header.set_algo(o_.algo);
  WorkerContext context{.options = o_,
                        .node = *node_,
                        .members = members_,
                        .membership = *membership_,
                        .trainer = *trainer_,
                        .loop = *loop_,
                        .state = state_,
                        .metrics = metrics_,
                        .segments = segments_,
                        .steps_per_epoch = steps_,
                        .topology_seed = topology_seed_,
                        .joined = joining_,
                        .resumed = resume_.has_value() && !joining_,
                        .resume_state = resume_ && !joining_ ? &resume_->state : nullptr,
                        .push_sum_weights = push_sum_weights_,
                        .snapshot_header = header,
                        .checkpointer = checkpointer_.get()};
  std::unique_ptr<Worker> worker = mode_.make_worker(context);
  auto refuse = [mine = mine_, accepts = mode_.accepts_joins, algo = o_.algo](const proto::Hello& h) {
    return accepts ? refusal(mine, h) : "--algo " + algo + " takes no joiners";
  };
  membership_->set_join_policy(JoinPolicy{refuse, topology_seed_});
  return worker;
}

int RunCommand::finish() {
  if (!o_.params_out.empty()) write_params(o_.params_out, trainer_->model().params());
  state_.update([](proto::Status& s) { s.set_state("done"); });
  const proto::Status final_status = state_.snapshot();
  if (const protocol::FaultCounts f = node_->fault_counts(); f.sent > 0) {
    std::printf(
        "gossipd run: %s faults injected: %llu of %llu messages dropped, %llu duplicated, %llu reordered\n",
        o_.id.c_str(), static_cast<unsigned long long>(f.dropped), static_cast<unsigned long long>(f.sent),
        static_cast<unsigned long long>(f.duplicated), static_cast<unsigned long long>(f.reordered));
  }
  if (final_status.has_groups()) {
    const proto::GroupsStatus& g = final_status.groups();
    std::printf(
        "gossipd run: %s compute group %u of %u: %llu segments folded in (staleness mean %.2f, max %lld "
        "steps), "
        "%llu superseded, %llu sends skipped, momentum %.3f (fitted to its updates %.3f)\n",
        o_.id.c_str(), g.group(), g.groups(), static_cast<unsigned long long>(g.segments_folded()),
        g.staleness_mean(), static_cast<long long>(g.staleness_max()),
        static_cast<unsigned long long>(g.segments_superseded()),
        static_cast<unsigned long long>(g.segments_skipped()), g.momentum(), g.fitted_momentum());
  }
  std::printf("gossipd run: %s done: round %llu test_accuracy %.4f param_hash %s gossip_bytes_sent %llu\n",
              o_.id.c_str(), static_cast<unsigned long long>(trainer_->step_count()),
              final_status.test_accuracy(), param_hash(trainer_->model().params()).c_str(),
              static_cast<unsigned long long>(final_status.bytes_sent()));
  std::fflush(stdout);
  node_->close();
  // Keep answering /status ("done", the final accuracy) for collectors.
  if (http_ && o_.linger_ms > 0)
    sleep_unless_stopped(std::chrono::milliseconds(o_.linger_ms), stop_.get_token());
  return kExitOk;
}

void RunCommand::fail(const std::exception& e) {
  state_.update([&](proto::Status& s) {
    s.set_state("failed");
    s.set_error(e.what());
  });
  node_->close();
}

int RunCommand::stopped() {
  state_.update([](proto::Status& s) { s.set_state("stopped"); });
  if (membership_) {
    membership_->leave();
    // Sockets close with linger 0 (a dead peer's queue must never hold up
    // shutdown): give the I/O thread a moment to put LEAVE on the wire.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  std::printf("gossipd run: %s stopped by signal at round %llu\n", o_.id.c_str(),
              static_cast<unsigned long long>(trainer_->step_count()));
  node_->close();
  return kExitOk;
}

}  // namespace

int run_run_command(const RunOptions& options) {
  if (find_mode(options.algo).own_run) return run_sparse(options);  // the one such mode
  return RunCommand(options).execute();
}

}  // namespace gossipd::daemon
