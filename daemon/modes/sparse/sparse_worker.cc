#include "daemon/modes/sparse/sparse_worker.h"

#include <chrono>
#include <numeric>

#include "daemon/modes/sparse/sparse_status.pb.h"
#include "daemon/observe/message_json.h"
#include "daemon/worker/epoch_report.h"
#include "daemon/worker/gone_member.h"
#include "daemon/worker/sync_start.h"
#include "protocol/wire/tags.h"
#include "trainer/lr_schedule.h"
#include "trainer/rng.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;
using Clock = std::chrono::steady_clock;

constexpr size_t kEvalBatch = 256;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class SparseWorker : public Worker {
 public:
  SparseWorker(WorkerContext& c, SparseReplica& r, protocol::tags::Range tags)
      : c_(c),
        o_(c.options),
        r_(r),
        tags_(tags),
        report_(c.state, c.metrics, c.log, c.on_evaluation),
        gone_{c_.membership,
              c_.members,
              o_.id,
              "sparse process",
              "restart every process with the same --partition",
              gone_wait(o_)} {}

  void run(std::stop_token stop) override;

 private:
  void describe(const RowTraining& rows);
  void train_epoch(uint32_t epoch, RowTraining& rows, std::stop_token stop);
  sp::SparseStep evaluate(RowTraining& rows, std::stop_token stop);
  void publish_step(const RowTraining& rows, double loss, uint64_t bytes_before);

  WorkerContext c_;  // a copy: the context lives only while the worker is made
  const RunOptions& o_;
  SparseReplica& r_;
  protocol::tags::Range tags_;  // the sparse mode's (SparseTag)
  EpochReport report_;
  GoneMember gone_;
  Clock::time_point start_;
  uint64_t forward_bytes_ = 0, backward_bytes_ = 0, logits_bytes_ = 0;
};

void SparseWorker::run(std::stop_token stop) {
  every_member_up(c_.node, tags_.at(kWorkerStartTag), c_.members, o_, stop);
  c_.membership.arm();  // failure detection from now: every member is up
  protocol::CollectiveOptions copts = step_options(o_);
  copts.stop = stop;
  RowTraining rows(c_.node, c_.members, std::move(r_.share), r_.neurons, trainer_options(o_.train).optimizer,
                   copts, tags_);
  describe(rows);
  start_ = Clock::now();
  for (uint32_t e = 0; e < static_cast<uint32_t>(o_.train.epochs); ++e) train_epoch(e, rows, stop);
  r_.share = rows.model();
  // Every byte it sent, the last evaluation's included.
  c_.state.update([&](proto::Status& s) { s.set_bytes_sent(c_.node.payload_bytes_sent()); });
}

void SparseWorker::describe(const RowTraining& rows) {
  c_.state.update([&](proto::Status& s) {
    s.set_state("training");
    s.set_epochs_total(static_cast<uint32_t>(o_.train.epochs));
    update_mode_status<proto::SparseStatus>(s, [&](proto::SparseStatus& sp) {
      sp.set_processes(r_.processes);
      sp.set_rank(r_.rank);
      sp.set_partition(r_.partition);
      sp.set_neurons(r_.neurons);
      sp.set_layers(r_.layers);
      for (const RowProduct& p : rows.model().share.products) {
        sp.set_neurons_owned(sp.neurons_owned() + p.mine.size());
        sp.set_edges_owned(sp.edges_owned() + p.local.rows.edges() + p.remote.rows.edges());
      }
      sp.set_words_per_product(r_.planned.words_per_product);
      sp.set_imbalance(r_.planned.imbalance);
    });
  });
}

void SparseWorker::train_epoch(uint32_t epoch, RowTraining& rows, std::stop_token stop) {
  const trainer::LrSchedule schedule(trainer_options(o_.train).schedule);
  std::vector<uint32_t> order(r_.train.inputs.count());
  std::iota(order.begin(), order.end(), 0u);
  trainer::Rng::derive(o_.train.seed, 3, epoch).shuffle(std::span<uint32_t>(order));
  const size_t b = o_.train.batch, steps = c_.steps_per_epoch;
  const auto epoch_start = Clock::now();
  double loss_sum = 0, lr = 0;
  size_t correct = 0;
  std::vector<uint8_t> labels(b);
  for (size_t s = 0; s < steps; ++s) {
    if (stop.stop_requested()) throw protocol::Aborted(o_.id, "training");
    const std::span<const uint32_t> which(order.data() + s * b, b);
    const sp::SparseInputs in = sp::pick_samples(r_.train.inputs, which);
    for (size_t k = 0; k < b; ++k) labels[k] = r_.train.labels[which[k]];
    lr = schedule.at(epoch + static_cast<double>(s) / static_cast<double>(steps));
    const uint64_t before = c_.node.payload_bytes_sent();
    const sp::SparseStep r = naming_the_gone(gone_, r_.rounds + 1, stop, [&] {
      return rows.step({in, labels, 0, b}, lr);
    });
    ++r_.rounds;
    loss_sum += r.loss * static_cast<double>(b);
    correct += static_cast<size_t>(r.correct);
    publish_step(rows, loss_sum / static_cast<double>((s + 1) * b), before);
  }
  const double train_s = seconds_since(epoch_start);
  const sp::SparseStep test = evaluate(rows, stop);
  const double n = static_cast<double>(steps * b);
  proto::EpochRecord rec;
  rec.set_epoch(epoch + 1);
  rec.set_progress(epoch + 1.0);
  rec.set_loss(loss_sum / n);
  rec.set_train_accuracy(static_cast<double>(correct) / n);
  rec.set_test_loss(test.loss);
  rec.set_test_accuracy(static_cast<double>(test.correct) /
                        static_cast<double>(std::max<size_t>(r_.test.inputs.count(), 1)));
  rec.set_samples(static_cast<uint32_t>(n));
  rec.set_samples_per_second(n / train_s);
  rec.set_wall_seconds(seconds_since(start_));
  rec.set_learning_rate(lr);
  rec.set_round(r_.rounds);
  rec.set_bytes_sent(c_.node.payload_bytes_sent());
  rec.set_rounds_per_second(static_cast<double>(r_.rounds) / seconds_since(start_));
  report_.publish(rec, param_hash(sparse_params(rows.model())));
}

// The test set through the whole network, in batches every member takes
// together: loss (mean) and correct count.
sp::SparseStep SparseWorker::evaluate(RowTraining& rows, std::stop_token stop) {
  sp::SparseStep total;
  const size_t n = r_.test.inputs.count();
  for (size_t first = 0; first < n; first += kEvalBatch) {
    const sp::SparseBatch b{r_.test.inputs, r_.test.labels, first, std::min(kEvalBatch, n - first)};
    const sp::SparseStep r = naming_the_gone(gone_, r_.rounds, stop, [&] { return rows.evaluate(b); });
    total.loss += r.loss * static_cast<double>(b.count);
    total.correct += r.correct;
  }
  if (n > 0) total.loss /= static_cast<double>(n);
  return total;
}

// After a step: the round, the running loss, the rate and the bytes per step by kind.
void SparseWorker::publish_step(const RowTraining& rows, double loss, uint64_t bytes_before) {
  const RowStepBytes& by = rows.last_bytes();
  const uint64_t fwd = std::accumulate(by.forward.begin(), by.forward.end(), uint64_t{0});
  const uint64_t bwd = std::accumulate(by.backward.begin(), by.backward.end(), uint64_t{0});
  forward_bytes_ += fwd;
  backward_bytes_ += bwd;
  logits_bytes_ += c_.node.payload_bytes_sent() - bytes_before - fwd - bwd;
  report_.step_done();
  const double steps = static_cast<double>(r_.rounds);
  c_.state.update([&](proto::Status& s) {
    s.set_round(r_.rounds);
    if (s.epoch() == 0) s.set_loss(loss);
    s.set_rounds_per_second(steps / seconds_since(start_));
    s.set_bytes_sent(c_.node.payload_bytes_sent());
    update_mode_status<proto::SparseStatus>(s, [&](proto::SparseStatus& sp) {
      sp.set_forward_bytes_per_step(static_cast<double>(forward_bytes_) / steps);
      sp.set_backward_bytes_per_step(static_cast<double>(backward_bytes_) / steps);
      sp.set_logits_bytes_per_step(static_cast<double>(logits_bytes_) / steps);
    });
  });
}

}  // namespace

std::unique_ptr<Worker> make_sparse_worker(WorkerContext& c, SparseReplica& r, protocol::tags::Range tags) {
  return std::make_unique<SparseWorker>(c, r, tags);
}

}  // namespace gossipd::daemon
