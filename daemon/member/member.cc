#include "daemon/member/member.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/config/cli.h"
#include "daemon/member/join_policy.h"
#include "daemon/member/node_setup.h"
#include "daemon/member/run_files.h"
#include "protocol/transport/curve.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {
namespace {

// How long a finished member's sockets keep sending what they still queue
// (its last round's segments to a slower peer, on a connection opened for
// them); the process's end waits at most this long for a peer that is down.
constexpr std::chrono::milliseconds kFinishFlush{2000};

}  // namespace

Member::Member(const RunOptions& o, const Mode& mode, MemberEvents& events, protocol::InProcHub* hub)
    : o_(o), mode_(mode), events_(events), hub_(hub) {}

Member::~Member() = default;

Member::End Member::run(std::stop_token stop) {
  check_run_options(o_);
  if (!hub_ && o_.listen.starts_with("inproc-hub://"))
    throw UsageError("--listen " + o_.listen +
                     " names a member in this process (gossipctl simulate's); use "
                     "tcp://HOST:PORT or ipc://PATH");
  mode_.check_flags(o_);
  if (o_.group == kAutoGroup && !mode_.groups_by_label())
    throw UsageError("--group auto labels the members for --hierarchical; --algo " + o_.algo +
                     " does not group its members by label: drop --group auto");
  place();
  load();
  if (o_.check_config) {
    if (!o_.curve_secret_key.empty())
      protocol::curve_options_from_files(o_.curve_secret_key, o_.curve_cluster_key);
    events_.config_ok(o_.algo, replica_->config_summary(), resume_ ? resume_->state.header.step() : 0);
    return End::kConfigChecked;
  }
  const std::stop_callback forward(stop, [this] { running_.request_stop(); });
  try {
    open_node();
    enter(running_.get_token());
    const std::unique_ptr<Worker> worker = make_worker();
    worker->run(running_.get_token());
    throw_if_lost();
  } catch (const std::exception& e) {
    // Cut off from its cluster, whatever that did to the step in progress
    // (aborted it, or failed it as the peers stopped answering): that is the end.
    try {
      throw_if_lost();
    } catch (const CutOff& cut) {
      fail(cut);
      throw;
    }
    if (dynamic_cast<const protocol::Aborted*>(&e)) return stopped();
    fail(e);
    throw;
  }
  return finish(stop);
}

void Member::throw_if_lost() {
  std::lock_guard lock(lost_mu_);
  if (!lost_why_.empty()) throw CutOff("node '" + o_.id + "' " + lost_why_, lost_contacts_);
}

RunOptions Member::rejoin_options(const CutOff& cut) const {
  RunOptions next = o_;
  next.peers.clear();
  next.join = cut.contacts();
  next.bootstrap = false;  // a cluster it was cut off from is not one to found anew
  next.rejoined = o_.rejoined + 1;
  if (node_) next.listen = node_->endpoint();  // the bound one: its port, if 0 was asked
  if (http_) next.http = o_.http.substr(0, o_.http.rfind(':')) + ":" + std::to_string(http_->port());
  return next;
}

// Where the others reach this member: --advertise; else, bound to every
// interface, its own --peers entry (where the others already reach it);
// else the endpoint it bound.
std::string Member::advertised_endpoint() const {
  if (!o_.advertise.empty()) return o_.advertise;
  if (binds_everything(node_->endpoint()) && !listed_endpoint_.empty()) return listed_endpoint_;
  return node_->endpoint();
}

// Who is who: the members listed in --peers (ranks in sorted order), or a
// joiner that learns them from the member it joins.
void Member::place() {
  peers_ = parse_peers(o_.peers);
  if (const auto own = peers_.find(o_.id); own != peers_.end()) listed_endpoint_ = own->second;
  peers_.erase(o_.id);
  joining_ = !o_.join.empty();
  if (joining_ && !mode_.accepts_joins())
    throw UsageError("--algo " + o_.algo + " takes no joiners: drop --join");
  if (!o_.checkpoint_dir.empty() && !mode_.writes_checkpoints())
    throw UsageError("--algo " + o_.algo + " writes no checkpoints: drop --checkpoint-dir");
  members_ = {o_.id};
  for (const auto& [id, endpoint] : peers_) members_.push_back(id);
  std::sort(members_.begin(), members_.end());
  rank_ = static_cast<size_t>(std::find(members_.begin(), members_.end(), o_.id) - members_.begin());
}

// What this process trains, as its mode loads it, and the checkpoint it
// would resume from.
void Member::load() {
  const Placement here{rank_, members_.size(), joining_};
  replica_ = mode_.load(o_, here);
  if (!o_.checkpoint_dir.empty()) resume_ = find_resume_point(o_, mode_.state_layout(o_, here, *replica_));
}

TrainedReplica& Member::trained() {
  TrainedReplica* t = replica_->trained();
  GOSSIPD_ENFORCE(t != nullptr, "--algo " + o_.algo + " joins or resumes only with a trained replica");
  return *t;
}

// The transport, /status and /metrics; then the control record that says where it listens.
void Member::open_node() {
  log_ = std::make_unique<JsonLinesWriter>(o_.metrics_out);
  protocol::NodeOptions nopts = node_options(o_);
  for (const auto& [id, endpoint] : peers_) nopts.initial_members.push_back(id);
  node_ = hub_ ? std::make_unique<protocol::Node>(nopts, *hub_) : std::make_unique<protocol::Node>(nopts);
  // Anyone may ask to join (or hear why not); a partition's other side may say
  // it is there (a REUNION counts only from a member this one evicted).
  node_->validator().set_open_types({proto::HELLO, proto::REUNION});
  // Known before any peer's first segment can arrive (a joiner's first round
  // is often already on its way when its worker starts).
  protocol::register_segments(*node_, replica_->segments());
  for (const auto& [id, endpoint] : peers_) node_->add_peer(id, endpoint);
  self_.set_id(o_.id);
  self_.set_endpoint(advertised_endpoint());
  // --group auto: no label until the member has measured its round trips (Membership::find_group).
  self_.set_group(o_.group == kAutoGroup ? ""
                  : o_.group.empty()     ? default_group(self_.endpoint())
                                         : o_.group);
  if (binds_everything(self_.endpoint())) {
    spdlog::warn(
        "node '{}': listening on {} without --advertise or a --peers entry of its own: joiners cannot "
        "use this member's endpoint",
        o_.id, self_.endpoint());
  }
  register_transport_metrics(metrics_, *node_);
  register_state_metrics(metrics_, state_);
  state_.update([&](proto::Status& s) {
    describe_worker(s, o_, *node_);
    if (joining_) s.set_state("joining");
  });
  if (!o_.http.empty())
    http_ = std::make_unique<HttpServer>(o_.http, status_routes(state_, metrics_, *node_, history_));
  events_.listening(record("listening"));
  if (TrainedReplica* t = replica_->trained())
    mine_ = describe(mode_.join_name(), self_, t->trainer(), replica_->segments());
  mine_.set_shares_on_segments(mode_.shares_on_segments());
  membership_options_.heartbeat_interval = std::chrono::milliseconds(o_.heartbeat_ms);
  membership_options_.failure_timeout = std::chrono::milliseconds(o_.failure_timeout_ms);
  membership_options_.on_lost = [this](const std::string& why, const std::vector<std::string>& contacts) {
    {
      std::lock_guard lock(lost_mu_);
      lost_why_ = why;
      lost_contacts_ = contacts;
    }
    running_.request_stop();
  };
  membership_options_.join_timeout = std::chrono::milliseconds(o_.startup_timeout_ms);
  membership_options_.state_chunk_bytes =
      std::min<size_t>(membership_options_.state_chunk_bytes, o_.max_message_bytes / 2);
  membership_options_.max_members = o_.max_members;
  if (o_.group == kAutoGroup)
    membership_options_.auto_group_near = std::chrono::milliseconds(o_.group_near_ms);
}

// The checkpointer, the training loop and the mode's worker; from here on
// the cluster may admit joiners through this member.
std::unique_ptr<Worker> Member::make_worker() {
  if (!o_.checkpoint_dir.empty()) {
    CheckpointOptions copts{o_.checkpoint_dir, o_.checkpoint_every, o_.checkpoint_keep};
    checkpointer_ = std::make_unique<Checkpointer>(copts, o_.id, [this](Checkpoint& c) {
      c.view = membership_->members();
      c.test_accuracy = state_.snapshot().test_accuracy();
    });
  }
  if (TrainedReplica* t = replica_->trained()) {
    // Evaluations run in the background on a model of the same shape.
    loop_ = std::make_unique<TrainingLoop>(o_.id, t->trainer(), t->test(), state_, metrics_, *log_, epochs_,
                                           evaluation_sink(), o_.evals_per_epoch, mode_.eval_model(o_));
    loop_->set_step_delay(std::chrono::milliseconds(o_.step_delay_ms));
    loop_->set_step_slowdown(o_.step_slowdown);
    loop_->set_emulated_step(std::chrono::milliseconds(o_.emulate_step_ms));
  }
  proto::StateHeader header;
  header.set_steps_per_epoch(steps_);
  header.set_epochs(static_cast<uint32_t>(epochs_));
  header.set_algo(o_.algo);
  WorkerContext context{.options = o_,
                        .node = *node_,
                        .members = members_,
                        .membership = *membership_,
                        .replica = *replica_,
                        .training_loop = loop_.get(),
                        .state = state_,
                        .metrics = metrics_,
                        .log = *log_,
                        .on_evaluation = evaluation_sink(),
                        .segments = replica_->segments(),
                        .steps_per_epoch = steps_,
                        .topology_seed = topology_seed_,
                        .joined = joining_,
                        .resumed = resume_.has_value() && !joining_,
                        .resume_state = resume_ && !joining_ ? &resume_->state : nullptr,
                        .entered_from = entered_from_ ? &*entered_from_ : nullptr,
                        .snapshot_header = header,
                        .checkpointer = checkpointer_.get()};
  std::unique_ptr<Worker> worker = mode_.make_worker(context);
  auto refuse = [mine = mine_, accepts = mode_.accepts_joins(), algo = o_.algo](const proto::Hello& h) {
    return accepts ? refusal(mine, h) : "--algo " + algo + " takes no joiners";
  };
  membership_->set_join_policy(JoinPolicy{refuse, topology_seed_});
  return worker;
}

proto::ControlRecord Member::record(const std::string& event) const {
  proto::ControlRecord r;
  r.set_event(event);
  r.set_id(o_.id);
  r.set_endpoint(node_->endpoint());
  r.set_http_port(http_ ? http_->port() : 0);
  const protocol::DataListener* data = node_->data_listener();
  r.set_data_port(data ? data->port() : 0);
  r.set_joining(joining_);
  if (!joining_) {
    r.set_rank(static_cast<uint32_t>(rank_));
    r.set_members(static_cast<uint32_t>(members_.size()));
  }
  if (event != "listening") {
    *r.mutable_status() = state_.snapshot();
    r.set_round(replica_->round());
    const protocol::FaultCounts f = node_->fault_counts();
    proto::InjectedFaults& faults = *r.mutable_faults();
    faults.set_sent(f.sent);
    faults.set_dropped(f.dropped);
    faults.set_duplicated(f.duplicated);
    faults.set_reordered(f.reordered);
    faults.set_retransmitted(f.retransmitted);
  }
  return r;
}

Member::End Member::finish(std::stop_token stop) {
  const std::vector<float> params = replica_->params();
  if (!o_.params_out.empty()) write_params(o_.params_out, params);
  state_.update([](proto::Status& s) { s.set_state("done"); });
  proto::ControlRecord end = record("done");
  end.set_param_hash(param_hash(params));
  if (membership_) membership_->stop();
  node_->transport().flush_on_close(kFinishFlush);  // closed with linger 0, they were dropped
  node_->close();
  events_.ended(end, mode_.final_report(end.status()));
  // Keep answering /status ("done", the final accuracy) for collectors.
  if (http_ && o_.linger_ms > 0) sleep_unless_stopped(std::chrono::milliseconds(o_.linger_ms), stop);
  return End::kDone;
}

void Member::fail(const std::exception& e) {
  const char* event = dynamic_cast<const CutOff*>(&e) ? "cut_off" : "failed";
  state_.update([&](proto::Status& s) {
    s.set_state(event);
    s.set_error(e.what());
  });
  if (!node_) return;  // it never listened: nobody was told it would
  // Cut off, it tells the peers it still holds that it goes: the rest of
  // its part, after a partition, would otherwise hold it for a failure
  // timeout, and take the other part's answers naming it (once it has
  // entered that part again) for a view that lags, not for the other side.
  if (membership_ && dynamic_cast<const CutOff*>(&e)) membership_->leave();
  const proto::ControlRecord end = record(event);
  node_->close();
  try {
    events_.ended(end, {});
  } catch (const std::exception& also) {
    spdlog::error("node '{}': its failure could not be reported: {}", o_.id, also.what());
  }
}

EvaluationSink Member::evaluation_sink() {
  return [this](const proto::EpochRecord& r) {
    history_.add(r);
    events_.evaluated(r, epochs_);
  };
}

Member::End Member::stopped() {
  state_.update([](proto::Status& s) { s.set_state("stopped"); });
  // LEAVE goes to every peer; the node's sockets flush it when they close.
  if (membership_) membership_->leave();
  const proto::ControlRecord end = record("stopped");
  node_->close();
  events_.ended(end, {});
  return End::kStopped;
}

}  // namespace gossipd::daemon
