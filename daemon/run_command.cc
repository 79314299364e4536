#include "daemon/run_command.h"

#include <asio.hpp>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <cstdio>
#include <stop_token>
#include <thread>

#include "daemon/allreduce_worker.h"
#include "daemon/checkpoint.h"
#include "daemon/gossip_worker.h"
#include "daemon/segments.h"
#include "daemon/training_loop.h"
#include "daemon/cli.h"
#include "daemon/http_server.h"
#include "daemon/join.h"
#include "daemon/membership.h"
#include "daemon/metrics.h"
#include "daemon/metrics_log.h"
#include "daemon/worker_state.h"
#include "protocol/curve.h"
#include "protocol/errors.h"
#include "protocol/node.h"
#include "protocol/reject_counters.h"
#include "protocol/segment_inbox.h"
#include "trainer/dataset.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

void register_transport_metrics(MetricsRegistry& metrics, protocol::Node& node) {
  metrics.sampled("gossipd_messages_rejected_total", "Inbound messages dropped by validation", "counter",
                  [&node] {
                    std::vector<std::pair<Labels, double>> out;
                    for (auto [reason, count] : node.counters().snapshot()) {
                      out.push_back({{{"reason", std::string(reason)}}, static_cast<double>(count)});
                    }
                    return out;
                  });
  metrics.sampled("gossipd_faults_injected_total", "Outbound messages hit by --inject-* faults", "counter", [&node] {
    const protocol::FaultCounts f = node.fault_counts();
    return std::vector<std::pair<Labels, double>>{{{{"kind", "drop"}}, double(f.dropped)},
                                                  {{{"kind", "duplicate"}}, double(f.duplicated)},
                                                  {{{"kind", "reorder"}}, double(f.reordered)}};
  });
  metrics.sampled("gossipd_curve_clients_refused_total", "Connections refused by the ZAP handler", "counter",
                  [&node] { return std::vector<std::pair<Labels, double>>{{{}, double(node.zap_refused())}}; });
}

HttpHandler status_routes(WorkerState& state, MetricsRegistry& metrics, protocol::Node& node) {
  return [&](const std::string& path) -> HttpResponse {
    if (path == "/status") {
      proto::Status s = state.snapshot();
      s.set_messages_rejected(node.counters().total());
      return {200, "application/json", to_json(s) + "\n"};
    }
    if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.render()};
    return {404, "text/plain; charset=utf-8", "not found; try /status or /metrics\n"};
  };
}

protocol::NodeOptions node_options(const RunCommandOptions& o) {
  protocol::NodeOptions n;
  n.id = o.id;
  n.listen = o.listen;
  n.validation.cluster_id = o.cluster_id;
  n.validation.max_message_bytes = o.max_message_bytes;
  n.validation.max_members = o.max_members;
  n.max_queued_bytes = o.max_queued_bytes;
  static_assert(RunCommandOptions::kMaxSendBufferKb * 1024 == protocol::ZmqTransportOptions::kDefaultSendBufferBytes,
                "gossipd run's default send buffer is the transport's");
  n.send_buffer_bytes = o.send_buffer_kb * 1024;
  n.faults.delay = std::chrono::milliseconds(o.delay_ms);
  n.faults.drop = o.inject_drop;
  n.faults.duplicate = o.inject_duplicate;
  n.faults.reorder = o.inject_reorder;
  n.faults.seed = o.inject_seed != 0 ? o.inject_seed : o.train.seed * 0x9e3779b97f4a7c15ULL ^ std::hash<std::string>{}(o.id);
  if (!o.curve_secret_key.empty()) {
    n.curve = protocol::curve_options_from_files(o.curve_secret_key, o.curve_cluster_key);
  }
  return n;
}

// What a joiner says about itself; a contact compares it with its own.
proto::Hello describe(const RunCommandOptions& o, const proto::Member& self, trainer::Trainer& trainer,
                      const protocol::SegmentTable& segments) {
  proto::Hello h;
  h.set_endpoint(self.endpoint());
  h.set_group(self.group());
  h.set_algo(o.algo + (o.hierarchical ? "-hierarchical" : ""));
  h.set_parameter_floats(trainer.model().params().size());
  h.set_optimizer_state_floats(trainer.optimizer().state().size());
  for (const auto& seg : segments) h.add_segment_lengths(seg.length);
  return h;
}

// Written next to the target and renamed, so a reader never sees half a file.
void write_params(const std::string& path, std::span<const float> params) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(params.data()), static_cast<std::streamsize>(params.size_bytes()));
    if (!out) throw std::runtime_error("cannot write --params-out " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::string refusal(const proto::Hello& mine, const proto::Hello& theirs) {
  if (theirs.algo() != mine.algo()) return "it runs --algo " + theirs.algo() + ", the cluster " + mine.algo();
  if (theirs.parameter_floats() != mine.parameter_floats()) {
    return "its model has " + std::to_string(theirs.parameter_floats()) + " parameters, the cluster's " +
           std::to_string(mine.parameter_floats()) + ": use the cluster's --model and --hidden";
  }
  if (theirs.optimizer_state_floats() != mine.optimizer_state_floats()) {
    return "its optimizer keeps " + std::to_string(theirs.optimizer_state_floats()) + " floats, the cluster's " +
           std::to_string(mine.optimizer_state_floats()) + ": use the cluster's --optimizer";
  }
  if (!std::equal(theirs.segment_lengths().begin(), theirs.segment_lengths().end(), mine.segment_lengths().begin(),
                  mine.segment_lengths().end())) {
    return "its segments differ from the cluster's: use the cluster's --segments";
  }
  return "";
}

// The newest usable checkpoint in --checkpoint-dir (created if missing),
// checked against this worker; damaged ones are reported and skipped.
std::optional<Checkpoint> find_resume_point(const RunCommandOptions& o, trainer::Trainer& trainer) {
  if (o.checkpoint_dir.empty()) return std::nullopt;
  std::error_code ec;
  std::filesystem::create_directories(o.checkpoint_dir, ec);
  if (ec) throw UsageError("--checkpoint-dir " + o.checkpoint_dir + ": " + ec.message());
  auto c = load_newest_checkpoint(o.checkpoint_dir, [&](const std::string& why) {
    spdlog::warn("node '{}': checkpoint {}; trying the previous one", o.id, why);
  });
  if (!c) return std::nullopt;
  const std::string where = "the checkpoints in " + o.checkpoint_dir;
  if (c->node_id != o.id) {
    throw UsageError(where + " belong to worker '" + c->node_id + "', not '" + o.id +
                     "': give every worker its own --checkpoint-dir");
  }
  const proto::StateHeader& h = c->state.header;
  if (h.algo() != o.algo) throw UsageError(where + " are of --algo " + h.algo() + ": use it, or another --checkpoint-dir");
  if (h.parameter_floats() != trainer.model().params().size() ||
      h.optimizer_state_floats() != trainer.optimizer().state().size()) {
    throw UsageError(where + " hold " + std::to_string(h.parameter_floats()) + " parameters and " +
                     std::to_string(h.optimizer_state_floats()) + " optimizer floats, this worker " +
                     std::to_string(trainer.model().params().size()) + " and " +
                     std::to_string(trainer.optimizer().state().size()) +
                     ": use the --model, --hidden and --optimizer they were written with, or another --checkpoint-dir");
  }
  return c;
}

// Sleeps for `d`, or less when `stop` fires.
void sleep_unless_stopped(std::chrono::steady_clock::duration d, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, d, [] { return false; });
}


}  // namespace


int run_run_command(const RunCommandOptions& o) {
  std::stop_source stop;
  SignalWatcher signals(stop);
  const TrainFlags& f = o.train;
  set_blas_threads(f.threads);
  check_run_options(o);
  auto peers = parse_peers(o.peers);
  peers.erase(o.id);
  bool joining = !o.join.empty();
  std::vector<std::string> members{o.id};
  for (const auto& [id, ep] : peers) members.push_back(id);
  std::sort(members.begin(), members.end());
  const int rank = static_cast<int>(std::find(members.begin(), members.end(), o.id) - members.begin());

  trainer::TrainerOptions topts = trainer_options(f);
  if (joining) {
    // The initial members split the data into shards; a joiner samples the
    // whole set, with a stream of its own.
    topts.sampler.mode = trainer::SamplingMode::kRandom;
    topts.sampler.seed = f.seed ^ std::hash<std::string>{}(o.id);
  } else {
    topts.sampler.worker_index = rank;
    topts.sampler.worker_count = static_cast<int>(members.size());
  }
  trainer::Dataset train = trainer::load_fashion_mnist(data_dir(f), trainer::Split::kTrain);
  trainer::Dataset test = trainer::load_fashion_mnist(data_dir(f), trainer::Split::kTest);
  if (f.train_limit > 0) train = train.head(f.train_limit);
  if (f.test_limit > 0) test = test.head(f.test_limit);
  trainer::Trainer trainer(trainer::make_model(model_options(f), f.seed), train, topts);
  const protocol::SegmentTable segments =
      make_segment_table(trainer.model().segments(), trainer.model().params().size(), o.segments);
  for (size_t s = 0; s < segments.size(); ++s) {
    // Envelope and framing come on top of the floats.
    if (segments[s].length * sizeof(float) + 4096 > o.max_message_bytes) {
      throw UsageError("--max-message-bytes " + std::to_string(o.max_message_bytes) + " is too small for segment " +
                       std::to_string(s) + " (" + std::to_string(segments[s].length * sizeof(float)) +
                       " bytes): every peer's copy of it would be rejected; raise it or use more --segments");
    }
  }
  const std::optional<Checkpoint> resume = find_resume_point(o, trainer);
  if (o.check_config) {
    if (!o.curve_secret_key.empty()) protocol::curve_options_from_files(o.curve_secret_key, o.curve_cluster_key);
    std::printf("gossipd run: configuration OK (%s, %zu parameters in %zu segments, %zu training samples%s)\n",
                o.algo.c_str(), trainer.model().params().size(), segments.size(), train.size(),
                resume ? (", resumes at round " + std::to_string(resume->state.header.step())).c_str() : "");
    return kExitOk;
  }

  JsonLinesWriter log(o.metrics_out);
  protocol::NodeOptions nopts = node_options(o);
  for (const auto& [id, ep] : peers) nopts.initial_members.push_back(id);
  protocol::Node node(nopts);
  node.validator().set_open_types({proto::HELLO});  // anyone may ask to join
  // Known before any peer's first segment can arrive (a joiner's first round
  // is often already on its way when its worker starts).
  protocol::register_segments(node, segments);
  for (const auto& [id, ep] : peers) node.add_peer(id, ep);
  proto::Member self;
  self.set_id(o.id);
  self.set_endpoint(o.advertise.empty() ? node.endpoint() : o.advertise);
  self.set_group(o.group.empty() ? default_group(self.endpoint()) : o.group);
  if (o.advertise.empty() && binds_everything(self.endpoint())) {
    spdlog::warn("node '{}': listening on {} without --advertise: joiners cannot use this member's endpoint",
                 o.id, self.endpoint());
  }
  WorkerState state;
  MetricsRegistry metrics;
  register_transport_metrics(metrics, node);
  state.update([&](proto::Status& s) {
    s.set_id(o.id);
    s.set_algo(o.algo);
    s.set_listen(node.endpoint());
    if (joining) s.set_state("joining");
  });
  std::unique_ptr<HttpServer> http;
  if (!o.http.empty()) http = std::make_unique<HttpServer>(o.http, status_routes(state, metrics, node));
  std::printf("gossipd run: id %s %s listening on %s", o.id.c_str(),
              joining ? "joining" : ("rank " + std::to_string(rank) + "/" + std::to_string(members.size())).c_str(),
              node.endpoint().c_str());
  if (http) std::printf(", http on port %u", http->port());
  std::printf("\n");
  std::fflush(stdout);

  const proto::Hello mine = describe(o, self, trainer, segments);
  MembershipOptions mopts;
  mopts.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  mopts.failure_timeout = std::chrono::milliseconds(o.failure_timeout_ms);
  mopts.join_timeout = std::chrono::milliseconds(o.startup_timeout_ms);
  mopts.state_chunk_bytes = std::min<size_t>(mopts.state_chunk_bytes, o.max_message_bytes / 2);
  mopts.max_members = o.max_members;
  size_t steps = TrainingLoop::steps_per_epoch(train.size(), members.size(), trainer.options().batch);
  int epochs = f.epochs;
  uint64_t topology_seed = f.seed;
  std::vector<double> push_sum_weights;
  std::unique_ptr<Membership> membership;  // owns the view from here on: members in /status and gossipd_members
  auto fail = [&](const std::exception& e) {
    state.update([&](proto::Status& s) {
      s.set_state("failed");
      s.set_error(e.what());
    });
    node.close();
  };
  auto stopped = [&] {
    state.update([](proto::Status& s) { s.set_state("stopped"); });
    if (membership) {
      membership->leave();
      // Sockets close with linger 0 (a dead peer's queue must never hold up
      // shutdown): give the I/O thread a moment to put LEAVE on the wire.
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
    std::printf("gossipd run: %s stopped by signal at round %llu\n", o.id.c_str(),
                static_cast<unsigned long long>(trainer.step_count()));
    node.close();
    return kExitOk;
  };
  JoinResult joined;
  if (joining) {
    try {
      // The model it starts from, evaluated while the cluster trains on: a
      // joiner that starts near the others shows it in this line.
      auto evaluate_download = [&](const JoinState& st) {
        auto params = trainer.model().params();
        std::copy(st.params.begin(), st.params.end(), params.begin());
        // SGP sends numerators and weights: the model is their quotient.
        for (size_t s = 0; s < static_cast<size_t>(st.header.push_sum_weights_size()) && s < segments.size(); ++s) {
          const float w = static_cast<float>(st.header.push_sum_weights(static_cast<int>(s)));
          for (size_t i = segments[s].offset; i < segments[s].offset + segments[s].length; ++i) params[i] /= w;
        }
        std::printf("gossipd run: %s downloaded the state at round %llu: test accuracy %.4f\n", o.id.c_str(),
                    static_cast<unsigned long long>(st.header.step()), trainer.evaluate(test).accuracy);
        std::fflush(stdout);
        std::copy(st.params.begin(), st.params.end(), params.begin());
      };
      joined = join_cluster(node, o.join, mine, trainer.optimizer().state().size(),
                            std::chrono::milliseconds(o.startup_timeout_ms), stop.get_token(), evaluate_download);
    } catch (const protocol::Aborted&) {
      return stopped();
    } catch (const NoMemberAnswered& e) {
      if (!o.bootstrap) {
        fail(e);
        throw;
      }
      // The first member of a new cluster: its own shard is all the data.
      spdlog::warn("node '{}': {}; starting as the first member (--bootstrap)", o.id, e.what());
      node.validator().set_open_types({proto::HELLO});
      joining = false;
    } catch (const JoinRefused& e) {
      fail(e);
      throw UsageError(e.what());
    } catch (const std::exception& e) {
      fail(e);
      throw;
    }
  }
  if (joining) {
    const proto::StateHeader& h = joined.state.header;
    std::copy(joined.state.optimizer.begin(), joined.state.optimizer.end(), trainer.optimizer().state().begin());
    trainer.set_step_count(joined.since_round - 1);  // its first round is the one it was admitted at
    steps = std::max<uint64_t>(1, h.steps_per_epoch());
    epochs = static_cast<int>(h.epochs());
    topology_seed = joined.topology_seed;
    push_sum_weights.assign(h.push_sum_weights().begin(), h.push_sum_weights().end());
    std::printf("gossipd run: %s joined through %s: enters at round %llu of %llu (epoch %llu)\n", o.id.c_str(),
                joined.contact.c_str(), static_cast<unsigned long long>(joined.since_round),
                static_cast<unsigned long long>(steps * static_cast<uint64_t>(epochs)),
                static_cast<unsigned long long>((joined.since_round - 1) / steps + 1));
    std::fflush(stdout);
    membership = std::make_unique<Membership>(node, self, joined.admitted, mopts, state, metrics);
    sleep_unless_stopped(joined.start_at - std::chrono::steady_clock::now(), stop.get_token());
    if (stop.stop_requested()) return stopped();
    if (resume) {
      std::printf("gossipd run: %s left its checkpoint of round %llu for the cluster's newer state\n", o.id.c_str(),
                  static_cast<unsigned long long>(resume->state.header.step()));
      std::fflush(stdout);
    }
  } else {
    membership = std::make_unique<Membership>(node, self, peers, mopts, state, metrics);
    if (resume) {
      const proto::StateHeader& h = resume->state.header;
      std::copy(resume->state.params.begin(), resume->state.params.end(), trainer.model().params().begin());
      std::copy(resume->state.optimizer.begin(), resume->state.optimizer.end(), trainer.optimizer().state().begin());
      trainer.set_step_count(h.step());
      push_sum_weights.assign(h.push_sum_weights().begin(), h.push_sum_weights().end());
      std::printf("gossipd run: %s resumes from its checkpoint of round %llu (epoch %u, test accuracy %.4f)\n",
                  o.id.c_str(), static_cast<unsigned long long>(h.step()), h.epoch(), resume->test_accuracy);
      std::fflush(stdout);
    }
  }
  std::unique_ptr<Checkpointer> checkpointer;
  if (!o.checkpoint_dir.empty()) {
    CheckpointOptions copts{o.checkpoint_dir, o.checkpoint_every, o.checkpoint_keep};
    checkpointer = std::make_unique<Checkpointer>(copts, o.id, [&](Checkpoint& c) {
      c.view = membership->members();
      c.test_accuracy = state.snapshot().test_accuracy();
    });
  }
  const bool resumed = resume && !joining;
  proto::StateHeader snapshot_header;
  snapshot_header.set_steps_per_epoch(steps);
  snapshot_header.set_epochs(static_cast<uint32_t>(epochs));
  snapshot_header.set_algo(o.algo);

  // Evaluations run in the background on a model of the same shape.
  TrainingLoop loop(o.id, trainer, test, state, metrics, log, epochs, o.quiet, o.evals_per_epoch,
                    trainer::make_model(model_options(f), f.seed));
  std::function<void(std::stop_token)> work;
  std::unique_ptr<AllreduceWorker> allreduce;
  std::unique_ptr<GossipWorker> gossip;
  if (o.algo == "allreduce") {
    AllreduceWorkerOptions w;
    w.steps_per_epoch = steps;
    w.timeout = std::chrono::milliseconds(o.timeout_ms);
    w.startup_timeout = std::chrono::milliseconds(o.startup_timeout_ms);
    w.failure_timeout = mopts.failure_timeout;
    w.joined = joining;
    w.snapshot_header = snapshot_header;
    w.checkpointer = checkpointer.get();
    w.resumed = resumed;
    allreduce = std::make_unique<AllreduceWorker>(node, members, *membership, trainer, loop, w);
    work = [&](std::stop_token st) { allreduce->run(st); };
  } else {
    GossipWorkerOptions w;
    w.algo = o.algo == "crossover" ? GossipAlgo::kCrossover : o.algo == "sgp" ? GossipAlgo::kSgp : GossipAlgo::kOsgp;
    w.steps_per_epoch = steps;
    w.seed = topology_seed;
    w.segments = segments;
    w.segment_deadline = std::chrono::milliseconds(o.segment_deadline_ms);
    w.overlap = o.overlap;
    w.pace = o.pace;
    w.hierarchical = o.hierarchical;
    w.spread = o.group_owner == "root" ? topology::GroupSpread::kRoot : topology::GroupSpread::kSpread;
    w.consensus_every = o.consensus_every;
    w.startup_timeout = std::chrono::milliseconds(o.startup_timeout_ms);
    w.joined = joining;
    w.push_sum_weights = push_sum_weights;
    w.snapshot_header = snapshot_header;
    w.checkpointer = checkpointer.get();
    w.resumed = resumed;
    gossip = std::make_unique<GossipWorker>(node, members, *membership, trainer, loop, state, metrics, w);
    work = [&](std::stop_token st) { gossip->run(st); };
  }
  membership->set_join_policy(JoinPolicy{[mine](const proto::Hello& h) { return refusal(mine, h); }, topology_seed});
  try {
    work(stop.get_token());
  } catch (const protocol::Aborted&) {
    return stopped();
  } catch (const protocol::TransportError& e) {
    fail(e);
    throw;
  }
  if (!o.params_out.empty()) write_params(o.params_out, trainer.model().params());
  state.update([](proto::Status& s) { s.set_state("done"); });
  const proto::Status final_status = state.snapshot();
  if (const protocol::FaultCounts f = node.fault_counts(); f.sent > 0) {
    std::printf("gossipd run: %s faults injected: %llu of %llu messages dropped, %llu duplicated, %llu reordered\n",
                o.id.c_str(), static_cast<unsigned long long>(f.dropped), static_cast<unsigned long long>(f.sent),
                static_cast<unsigned long long>(f.duplicated), static_cast<unsigned long long>(f.reordered));
  }
  std::printf("gossipd run: %s done: round %llu test_accuracy %.4f param_hash %s gossip_bytes_sent %llu\n",
              o.id.c_str(), static_cast<unsigned long long>(trainer.step_count()), final_status.test_accuracy(),
              param_hash(trainer.model().params()).c_str(),
              static_cast<unsigned long long>(final_status.bytes_sent()));
  std::fflush(stdout);
  node.close();
  // Keep answering /status ("done", the final accuracy) for collectors.
  if (http && o.linger_ms > 0) sleep_unless_stopped(std::chrono::milliseconds(o.linger_ms), stop.get_token());
  return kExitOk;
}

}  // namespace gossipd::daemon
