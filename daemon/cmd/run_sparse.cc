#include "daemon/cmd/run_sparse.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>

#include "daemon/cluster/membership.h"
#include "daemon/cmd/node_setup.h"
#include "daemon/cmd/run_files.h"
#include "daemon/config/cli.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/sparse/row_training.h"
#include "daemon/sparse/sparse_partition.h"
#include "daemon/sparse/sparse_traffic.h"
#include "daemon/worker/sync_start.h"
#include "protocol/tags.h"
#include "trainer/lr_schedule.h"
#include "trainer/rng.h"
#include "trainer/sparse/fashion_inputs.h"
#include "trainer/sparse/radix_net.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kClasses = 10;
constexpr size_t kEvalBatch = 256;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Every parameter this process holds, one after another (its hash names the share).
std::vector<float> flat(const RowModel& m) {
  std::vector<float> out;
  const auto add = [&](const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); };
  for (const RowProduct& p : m.share.products) {
    for (const RowSet* s : {&p.local, &p.remote}) {
      add(s->rows.weights);
      add(s->rows.bias);
    }
  }
  add(m.head.weights);
  add(m.head_bias);
  return out;
}

// gossipd run --algo sparse, phase by phase (as gossipd run's RunCommand).
class SparseRun {
 public:
  explicit SparseRun(const RunOptions& o)
      : o_(o),
        f_(o.train),
        neurons_(o.neurons != 0 ? o.neurons : 1024),
        layers_(o.layers != 0 ? o.layers : 4),
        spec_(o.partition == "auto" ? "hypergraph" : o.partition) {}
  int execute();

 private:
  void place();
  void build();
  void load_data();
  int report_config() const;
  void open_node();
  void train();
  void train_epoch(uint32_t epoch, RowTraining& rows, const GoneMember& gone);
  sp::SparseStep evaluate(RowTraining& rows, const GoneMember& gone);
  void publish_step(const RowTraining& rows, double loss, uint64_t bytes_before);
  int finish();
  int stopped();

  const RunOptions& o_;
  const TrainFlags& f_;
  const uint32_t neurons_, layers_;
  const std::string spec_;
  std::stop_source stop_;
  SignalWatcher signals_{stop_};
  std::map<std::string, std::string> peers_;
  std::vector<std::string> members_;  // sorted: index = rank = process of the partition
  uint32_t rank_ = 0;
  sp::SparseNet pattern_;
  SparseTraffic planned_;
  RowModel share_;
  sp::SparseDataset train_, test_;
  size_t steps_ = 1;
  std::unique_ptr<JsonLinesWriter> log_;
  std::unique_ptr<protocol::Node> node_;
  WorkerState state_;
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Membership> membership_;
  uint64_t round_ = 0;
  Clock::time_point start_;
  uint64_t forward_bytes_ = 0, backward_bytes_ = 0, logits_bytes_ = 0;
  double test_accuracy_ = 0;
};

int SparseRun::execute() {
  check_run_options(o_);
  place();
  build();
  load_data();
  if (o_.check_config) return report_config();
  open_node();
  try {
    train();
  } catch (const protocol::Aborted&) {
    return stopped();
  } catch (const std::exception& e) {
    state_.update([&](proto::Status& s) {
      s.set_state("failed");
      s.set_error(e.what());
    });
    node_->close();
    throw;
  }
  return finish();
}

void SparseRun::place() {
  if (!o_.join.empty())
    throw UsageError("--algo sparse takes no joiners (its partition is made for P processes): drop --join");
  if (!o_.checkpoint_dir.empty())
    throw UsageError("--algo sparse writes no checkpoints yet: drop --checkpoint-dir");
  if (f_.optimizer == "lars")
    throw UsageError(
        "--optimizer lars is not for --algo sparse (its norms would need whole layers): use sgd");
  peers_ = parse_peers(o_.peers);
  peers_.erase(o_.id);
  members_ = {o_.id};
  for (const auto& [id, endpoint] : peers_) members_.push_back(id);
  std::sort(members_.begin(), members_.end());
  rank_ = static_cast<uint32_t>(std::find(members_.begin(), members_.end(), o_.id) - members_.begin());
}

// The network, its partition over the members and this process's share.
void SparseRun::build() {
  const auto side = static_cast<uint32_t>(std::lround(std::sqrt(static_cast<double>(neurons_))));
  if (side * side != neurons_ || (neurons_ & (neurons_ - 1)) != 0 || neurons_ < 64) {
    throw UsageError("--neurons " + std::to_string(neurons_) +
                     ": the network is a RadiX-Net (a power of two) fed √N × √N images (a square): use "
                     "64, 256, 1024, 4096, 16384 or 65536");
  }
  const auto procs = static_cast<uint32_t>(members_.size());
  if (procs > 64 || procs > neurons_) {
    throw UsageError("--algo sparse: " + std::to_string(procs) + " members for " + std::to_string(neurons_) +
                     " neurons per layer: at most 64 and at most N");
  }
  pattern_ = sp::make_radix_net(neurons_, layers_);
  NeuronOwners owners;
  try {
    owners = partition_by_spec(spec_, pattern_, procs, {o_.imbalance, f_.seed});
  } catch (const std::invalid_argument& e) {
    throw UsageError("--partition " + spec_ + ": " + e.what());
  }
  planned_ = price_partition(pattern_, owners, procs);
  share_ = share_model(sp::make_trainable(pattern_, kClasses, f_.seed), owners, procs, rank_);
}

void SparseRun::load_data() {
  trainer::Dataset train = trainer::load_fashion_mnist(data_dir(f_), trainer::Split::kTrain);
  trainer::Dataset test = trainer::load_fashion_mnist(data_dir(f_), trainer::Split::kTest);
  if (f_.train_limit > 0) train = train.head(f_.train_limit);
  if (f_.test_limit > 0) test = test.head(f_.test_limit);
  train_ = sp::sparse_dataset(train, neurons_);
  test_ = sp::sparse_dataset(test, neurons_);
  steps_ = train_.inputs.count() / f_.batch;
  if (steps_ == 0) {
    throw UsageError("--batch " + std::to_string(f_.batch) + " is more than the " +
                     std::to_string(train_.inputs.count()) + " training samples");
  }
}

int SparseRun::report_config() const {
  size_t edges = 0;
  for (const RowProduct& p : share_.share.products) edges += p.local.rows.edges() + p.remote.rows.edges();
  std::printf(
      "gossipd run: configuration OK (sparse, %u neurons x %u layers, process %u of %zu, partition %s: "
      "%.1f words per product, imbalance %.3f; %zu edges here, %zu training samples)\n",
      neurons_, layers_, rank_, members_.size(), spec_.c_str(), planned_.words_per_product,
      planned_.imbalance, edges, train_.inputs.count());
  return kExitOk;
}

void SparseRun::open_node() {
  log_ = std::make_unique<JsonLinesWriter>(o_.metrics_out);
  protocol::NodeOptions nopts = node_options(o_);
  for (const auto& [id, endpoint] : peers_) nopts.initial_members.push_back(id);
  node_ = std::make_unique<protocol::Node>(nopts);
  node_->validator().set_open_types({proto::HELLO});  // a joiner hears why not
  for (const auto& [id, endpoint] : peers_) node_->add_peer(id, endpoint);
  proto::Member self;
  self.set_id(o_.id);
  self.set_endpoint(o_.advertise.empty() ? node_->endpoint() : o_.advertise);
  self.set_group(o_.group.empty() ? "sparse" : o_.group);
  register_transport_metrics(metrics_, *node_);
  state_.update([&](proto::Status& s) { describe_worker(s, o_, *node_); });
  if (!o_.http.empty())
    http_ = std::make_unique<HttpServer>(o_.http, status_routes(state_, metrics_, *node_));
  std::printf("gossipd run: id %s rank %u/%zu listening on %s", o_.id.c_str(), rank_, members_.size(),
              node_->endpoint().c_str());
  if (http_) std::printf(", http on port %u", http_->port());
  std::printf("\n");
  std::fflush(stdout);
  MembershipOptions mo;
  mo.heartbeat_interval = std::chrono::milliseconds(o_.heartbeat_ms);
  mo.failure_timeout = std::chrono::milliseconds(o_.failure_timeout_ms);
  mo.join_timeout = std::chrono::milliseconds(o_.startup_timeout_ms);
  membership_ = std::make_unique<Membership>(*node_, self, peers_, mo, state_, metrics_);
  membership_->set_join_policy(
      {[](const proto::Hello&) { return std::string("--algo sparse takes no joiners"); }, f_.seed});
}

// Every member up, then the epochs; each ends with the test set's loss and
// accuracy (a distributed forward on every member).
void SparseRun::train() {
  const std::stop_token stop = stop_.get_token();
  const uint32_t tag = protocol::tags::range(protocol::tags::User::kSparse).at(4);
  every_member_up(*node_, tag, members_, o_, stop);
  membership_->arm();  // failure detection from now: every member is up
  protocol::CollectiveOptions copts = step_options(o_);
  copts.stop = stop;
  RowTraining rows(*node_, members_, std::move(share_), neurons_, trainer_options(f_).optimizer, copts);
  const GoneMember gone{
      *membership_, members_, o_.id, "sparse process", "restart every process with the same --partition",
      gone_wait(o_)};
  state_.update([&](proto::Status& s) {
    s.set_state("training");
    s.set_epochs_total(static_cast<uint32_t>(f_.epochs));
    proto::SparseStatus& sp = *s.mutable_sparse();
    sp.set_processes(static_cast<uint32_t>(members_.size()));
    sp.set_rank(rank_);
    sp.set_partition(spec_);
    sp.set_neurons(neurons_);
    sp.set_layers(layers_);
    for (const RowProduct& p : rows.model().share.products) {
      sp.set_neurons_owned(sp.neurons_owned() + p.mine.size());
      sp.set_edges_owned(sp.edges_owned() + p.local.rows.edges() + p.remote.rows.edges());
    }
    sp.set_words_per_product(planned_.words_per_product);
    sp.set_imbalance(planned_.imbalance);
  });
  start_ = Clock::now();
  for (uint32_t e = 0; e < static_cast<uint32_t>(f_.epochs); ++e) train_epoch(e, rows, gone);
  share_ = rows.model();
}

void SparseRun::train_epoch(uint32_t epoch, RowTraining& rows, const GoneMember& gone) {
  const std::stop_token stop = stop_.get_token();
  const trainer::LrSchedule schedule(trainer_options(f_).schedule);
  std::vector<uint32_t> order(train_.inputs.count());
  std::iota(order.begin(), order.end(), 0u);
  trainer::Rng::derive(f_.seed, 3, epoch).shuffle(std::span<uint32_t>(order));
  const size_t b = f_.batch;
  const auto epoch_start = Clock::now();
  double loss_sum = 0, lr = 0;
  size_t correct = 0;
  std::vector<uint8_t> labels(b);
  for (size_t s = 0; s < steps_; ++s) {
    if (stop.stop_requested()) throw protocol::Aborted(o_.id, "training");
    const std::span<const uint32_t> which(order.data() + s * b, b);
    const sp::SparseInputs in = sp::pick_samples(train_.inputs, which);
    for (size_t k = 0; k < b; ++k) labels[k] = train_.labels[which[k]];
    lr = schedule.at(epoch + static_cast<double>(s) / static_cast<double>(steps_));
    const uint64_t before = node_->payload_bytes_sent();
    const sp::SparseStep r = naming_the_gone(gone, round_ + 1, stop, [&] {
      return rows.step({in, labels, 0, b}, lr);
    });
    ++round_;
    loss_sum += r.loss * static_cast<double>(b);
    correct += static_cast<size_t>(r.correct);
    publish_step(rows, loss_sum / static_cast<double>((s + 1) * b), before);
  }
  const double train_s = seconds_since(epoch_start);
  const sp::SparseStep test = evaluate(rows, gone);
  test_accuracy_ =
      static_cast<double>(test.correct) / static_cast<double>(std::max<size_t>(test_.inputs.count(), 1));
  const double n = static_cast<double>(steps_ * b);
  proto::EpochRecord rec;
  rec.set_epoch(epoch + 1);
  rec.set_progress(epoch + 1.0);
  rec.set_loss(loss_sum / n);
  rec.set_train_accuracy(static_cast<double>(correct) / n);
  rec.set_test_loss(test.loss);
  rec.set_test_accuracy(test_accuracy_);
  rec.set_samples(static_cast<uint32_t>(n));
  rec.set_samples_per_second(n / train_s);
  rec.set_wall_seconds(seconds_since(start_));
  rec.set_learning_rate(lr);
  rec.set_round(round_);
  rec.set_bytes_sent(node_->payload_bytes_sent());
  rec.set_rounds_per_second(static_cast<double>(round_) / seconds_since(start_));
  log_->write(rec);
  const std::string hash = param_hash(flat(rows.model()));
  state_.update([&](proto::Status& s) {
    s.set_epoch(epoch + 1);
    s.set_loss(rec.loss());
    s.set_test_accuracy(test_accuracy_);
    s.set_test_loss(test.loss);
    s.set_param_hash(hash);
  });
  metrics_.gauge("gossipd_epoch", "Epochs completed").set(epoch + 1);
  metrics_.gauge("gossipd_loss", "Mean training loss of the last epoch").set(rec.loss());
  metrics_.gauge("gossipd_test_accuracy", "Test accuracy at the last evaluation").set(test_accuracy_);
  if (!o_.quiet) {
    std::printf("[%s] epoch %u/%d  loss %.4f  train_acc %.4f  test_acc %.4f  round %llu  %.1f s\n",
                o_.id.c_str(), epoch + 1, f_.epochs, rec.loss(), rec.train_accuracy(), test_accuracy_,
                static_cast<unsigned long long>(round_), rec.wall_seconds());
    std::fflush(stdout);
  }
}

// The test set through the whole network, in batches every member takes
// together: loss (mean) and correct count.
sp::SparseStep SparseRun::evaluate(RowTraining& rows, const GoneMember& gone) {
  sp::SparseStep total;
  const size_t n = test_.inputs.count();
  for (size_t first = 0; first < n; first += kEvalBatch) {
    const sp::SparseBatch b{test_.inputs, test_.labels, first, std::min(kEvalBatch, n - first)};
    const sp::SparseStep r =
        naming_the_gone(gone, round_, stop_.get_token(), [&] { return rows.evaluate(b); });
    total.loss += r.loss * static_cast<double>(b.count);
    total.correct += r.correct;
  }
  if (n > 0) total.loss /= static_cast<double>(n);
  return total;
}

// After a step: the round, the running loss, the rate and the bytes per step by kind.
void SparseRun::publish_step(const RowTraining& rows, double loss, uint64_t bytes_before) {
  const RowStepBytes& by = rows.last_bytes();
  const uint64_t fwd = std::accumulate(by.forward.begin(), by.forward.end(), uint64_t{0});
  const uint64_t bwd = std::accumulate(by.backward.begin(), by.backward.end(), uint64_t{0});
  forward_bytes_ += fwd;
  backward_bytes_ += bwd;
  logits_bytes_ += node_->payload_bytes_sent() - bytes_before - fwd - bwd;
  metrics_.counter("gossipd_rounds_total", "Training rounds (steps) completed").add();
  const double steps = static_cast<double>(round_);
  state_.update([&](proto::Status& s) {
    s.set_round(round_);
    if (s.epoch() == 0) s.set_loss(loss);
    s.set_rounds_per_second(steps / seconds_since(start_));
    s.set_bytes_sent(node_->payload_bytes_sent());
    proto::SparseStatus& sp = *s.mutable_sparse();
    sp.set_forward_bytes_per_step(static_cast<double>(forward_bytes_) / steps);
    sp.set_backward_bytes_per_step(static_cast<double>(backward_bytes_) / steps);
    sp.set_logits_bytes_per_step(static_cast<double>(logits_bytes_) / steps);
  });
}

int SparseRun::finish() {
  const std::vector<float> params = flat(share_);
  if (!o_.params_out.empty()) write_params(o_.params_out, params);
  state_.update([](proto::Status& s) { s.set_state("done"); });
  std::printf("gossipd run: %s done: round %llu test_accuracy %.4f param_hash %s bytes_sent %llu\n",
              o_.id.c_str(), static_cast<unsigned long long>(round_), test_accuracy_,
              param_hash(params).c_str(), static_cast<unsigned long long>(node_->payload_bytes_sent()));
  std::fflush(stdout);
  node_->close();
  if (http_ && o_.linger_ms > 0)
    sleep_unless_stopped(std::chrono::milliseconds(o_.linger_ms), stop_.get_token());
  return kExitOk;
}

int SparseRun::stopped() {
  state_.update([](proto::Status& s) { s.set_state("stopped"); });
  membership_->leave();
  // Sockets close with linger 0: give the I/O thread a moment to send LEAVE.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::printf("gossipd run: %s stopped by signal at round %llu\n", o_.id.c_str(),
              static_cast<unsigned long long>(round_));
  std::fflush(stdout);
  node_->close();
  return kExitOk;
}

}  // namespace

int run_sparse(const RunOptions& options) { return SparseRun(options).execute(); }

}  // namespace gossipd::daemon
