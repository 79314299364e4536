#include "daemon/worker/background_eval.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/mode_set.h"
#include "daemon/worker/training_loop.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "trainer/dataset.h"
#include "trainer/models.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {
namespace {

using trainer::Dataset;
using trainer::EvalResult;

class BackgroundEval : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    openblas_set_num_threads(1);
    train_ =
        new Dataset(trainer::load_fashion_mnist(GOSSIPD_TEST_DATA_DIR, trainer::Split::kTrain).head(2048));
    // Not a multiple of the evaluation batch: the last batch is short.
    test_ = new Dataset(trainer::load_fashion_mnist(GOSSIPD_TEST_DATA_DIR, trainer::Split::kTest).head(1000));
  }
  static void TearDownTestSuite() {
    delete train_;
    delete test_;
  }

  static std::unique_ptr<trainer::Model> model() { return trainer::make_model(trainer::ModelOptions{}, 7); }

  static std::unique_ptr<trainer::Trainer> make_trainer() {
    trainer::TrainerOptions to;
    to.batch = 32;
    to.eval_batch = 128;
    to.label_smoothing = 0.1f;
    to.schedule.base_lr = 0.05f;
    to.schedule.total_epochs = 1;
    return std::make_unique<trainer::Trainer>(model(), *train_, to);
  }

  static void train(trainer::Trainer& t, int steps) {
    for (int i = 0; i < steps; ++i) t.train_step(t.sampler().next_batch(t.options().batch));
  }

  static Dataset* train_;
  static Dataset* test_;
};

Dataset* BackgroundEval::train_ = nullptr;
Dataset* BackgroundEval::test_ = nullptr;

struct Published {
  std::optional<EvalResult> result;
  std::vector<float> params;
  int calls = 0;
};

BackgroundEvaluator::Done record(Published& p) {
  return [&p](const EvalResult& r, std::span<const float> params) {
    p.result = r;
    p.params.assign(params.begin(), params.end());
    ++p.calls;
  };
}

void expect_same(const EvalResult& a, const EvalResult& b) {
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.accuracy, b.accuracy);  // to the bit: the batch sums are added in the same order
  EXPECT_EQ(a.loss, b.loss);
}

TEST_F(BackgroundEval, TheCallerFinishesAnEvaluationOnTheSnapshotAndPutsTheLiveParametersBack) {
  auto t = make_trainer();
  train(*t, 5);
  const std::vector<float> snapshot(t->model().params().begin(), t->model().params().end());
  const EvalResult inline_result = t->evaluate(*test_);
  BackgroundEvaluator ev(model(), *t, *test_, /*max_pending=*/0, /*start_thread=*/false);
  Published p;
  EXPECT_EQ(ev.submit(snapshot, record(p)), 0.0);  // nothing to finish yet
  ev.poll();
  EXPECT_EQ(p.calls, 0) << "published before it was evaluated";
  train(*t, 5);  // training goes on; the evaluation is of the snapshot
  const std::vector<float> live(t->model().params().begin(), t->model().params().end());
  ASSERT_NE(live, snapshot);
  ev.finish();
  ASSERT_EQ(p.calls, 1);
  expect_same(*p.result, inline_result);
  EXPECT_EQ(p.params, snapshot);
  EXPECT_EQ(ev.batches_on_caller(), 8u);  // 1000 samples in batches of 128
  EXPECT_EQ(std::vector<float>(t->model().params().begin(), t->model().params().end()), live);
  ev.finish();
  EXPECT_EQ(p.calls, 1) << "published twice";
}

TEST_F(BackgroundEval, TheBackgroundThreadEvaluatesWhileTheCallerGoesOn) {
  auto t = make_trainer();
  train(*t, 3);
  const EvalResult inline_result = t->evaluate(*test_);
  BackgroundEvaluator ev(model(), *t, *test_);
  Published p;
  ev.submit(t->model().params(), record(p));
  train(*t, 3);
  // The thread runs at idle priority: wait (bounded) for it to complete.
  ASSERT_TRUE(testing::wait_until(
      [&] {
        ev.poll();
        return p.calls > 0;
      },
      std::chrono::seconds(60)))
      << "the background thread did not complete the evaluation in 60 s";
  ASSERT_EQ(p.calls, 1);
  EXPECT_EQ(ev.batches_on_caller(), 0u);
  expect_same(*p.result, inline_result);
}

TEST_F(BackgroundEval, EvaluationsWaitTheirTurnAndTheCallerFinishesTheOldestOnlyWhenTheQueueIsFull) {
  auto t = make_trainer();
  BackgroundEvaluator ev(model(), *t, *test_, /*max_pending=*/3, /*start_thread=*/false);
  ASSERT_EQ(ev.max_pending(), 3u);
  std::vector<EvalResult> expected, got;
  std::vector<std::vector<float>> snapshots, got_params;
  auto submit = [&] {
    train(*t, 2);
    snapshots.emplace_back(t->model().params().begin(), t->model().params().end());
    expected.push_back(t->evaluate(*test_));
    return ev.submit(t->model().params(), [&](const EvalResult& r, std::span<const float> params) {
      got.push_back(r);
      got_params.emplace_back(params.begin(), params.end());
    });
  };
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(submit(), 0.0) << "submission " << i << " waited with room in the queue";
  ev.poll();
  EXPECT_EQ(ev.pending(), 3u);
  EXPECT_EQ(got.size(), 0u);
  EXPECT_EQ(ev.batches_on_caller(), 0u);
  submit();  // the queue is full: the oldest is finished by the caller, and only it
  EXPECT_EQ(ev.batches_on_caller(), 8u);
  EXPECT_EQ(ev.pending(), 3u);
  ASSERT_EQ(got.size(), 1u);
  train(*t, 1);
  const std::vector<float> live(t->model().params().begin(), t->model().params().end());
  ev.finish();
  EXPECT_EQ(ev.pending(), 0u);
  EXPECT_EQ(ev.batches_on_caller(), 32u);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) {
    expect_same(got[i], expected[i]);
    EXPECT_EQ(got_params[i], snapshots[i]) << "evaluation " << i << " published out of order";
  }
  EXPECT_EQ(std::vector<float>(t->model().params().begin(), t->model().params().end()), live);
}

// No idle cycles (no background thread here): an evaluation that has waited
// past max_wait is finished by the caller at the next poll, one per poll,
// with the same figures; within max_wait it keeps waiting.
TEST_F(BackgroundEval, AnEvaluationWaitingPastMaxWaitIsFinishedByTheCallerAtThePoll) {
  auto t = make_trainer();
  train(*t, 2);
  const EvalResult inline_result = t->evaluate(*test_);
  {
    BackgroundEvaluator patient(model(), *t, *test_, 8, /*start_thread=*/false, std::chrono::hours(1));
    Published p;
    patient.submit(t->model().params(), record(p));
    EXPECT_EQ(patient.poll(), 0.0);
    EXPECT_EQ(p.calls, 0) << "finished before it waited an hour";
    EXPECT_EQ(patient.pending(), 1u);
  }
  BackgroundEvaluator ev(model(), *t, *test_, 8, /*start_thread=*/false, std::chrono::nanoseconds(0));
  Published first, second;
  ev.submit(t->model().params(), record(first));
  ev.submit(t->model().params(), record(second));
  EXPECT_GT(ev.poll(), 0.0);
  ASSERT_EQ(first.calls, 1);
  EXPECT_EQ(second.calls, 0) << "more than one finished in one poll";
  expect_same(*first.result, inline_result);
  EXPECT_EQ(ev.batches_on_caller(), 8u);
  ev.poll();
  EXPECT_EQ(second.calls, 1);
  EXPECT_EQ(ev.pending(), 0u);
}

TEST_F(BackgroundEval, TheBackgroundThreadWorksThroughAQueueInOrder) {
  auto t = make_trainer();
  BackgroundEvaluator ev(model(), *t, *test_);
  std::vector<EvalResult> expected, got;
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    train(*t, 1);
    expected.push_back(t->evaluate(*test_));
    EXPECT_EQ(ev.submit(t->model().params(),
                        [&, i](const EvalResult& r, std::span<const float>) {
                          got.push_back(r);
                          order.push_back(i);
                        }),
              0.0);
  }
  ASSERT_TRUE(testing::wait_until(
      [&] {
        ev.poll();
        return got.size() >= expected.size();
      },
      std::chrono::seconds(60)))
      << "the background thread did not complete 5 evaluations in 60 s";
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(ev.batches_on_caller(), 0u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(order[i], static_cast<int>(i));
    expect_same(got[i], expected[i]);
  }
}

TEST_F(BackgroundEval, TheQueueHoldsAsManyCopiesAsFitIn64MiB) {
  auto t = make_trainer();
  EXPECT_EQ(BackgroundEvaluator(model(), *t, *test_).max_pending(), 64u);  // 0.9 MB a copy: the cap
  trainer::ModelOptions wide;
  wide.hidden = {4096, 2048};  // 11.6 M parameters, 46 MB a copy: one
  trainer::TrainerOptions to = t->options();
  trainer::Trainer big(trainer::make_model(wide, 1), *train_, to);
  EXPECT_EQ(BackgroundEvaluator(trainer::make_model(wide, 1), big, *test_, 0, false).max_pending(), 1u);
  wide.hidden = {1024, 1024};  // 1.86 M parameters, 7.5 MB a copy: 9
  trainer::Trainer mid(trainer::make_model(wide, 1), *train_, to);
  EXPECT_EQ(BackgroundEvaluator(trainer::make_model(wide, 1), mid, *test_, 0, false).max_pending(), 9u);
}

TEST_F(BackgroundEval, HowEverTheBatchesAreSharedTheFiguresAreTheSameAndPublishedInOrder) {
  auto t = make_trainer();
  BackgroundEvaluator ev(model(), *t, *test_, /*max_pending=*/2);
  std::vector<EvalResult> expected, got;
  std::vector<int> order;
  for (int i = 0; i < 12; ++i) {
    train(*t, 1);
    expected.push_back(t->evaluate(*test_));
    // Every other submission follows the previous one at once, so that with
    // a queue of two the caller takes over evaluations in every state of progress.
    ev.submit(t->model().params(), [&, i](const EvalResult& r, std::span<const float>) {
      got.push_back(r);
      order.push_back(i);
    });
    if (i % 2 == 1) train(*t, 2);
  }
  ev.finish();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(order[i], static_cast<int>(i));
    expect_same(got[i], expected[i]);
  }
}

TEST_F(BackgroundEval, AnEvaluationInFlightIsAbandonedOnDestructionAndAWrongSizeIsRefused) {
  auto t = make_trainer();
  Published p;
  {
    BackgroundEvaluator ev(model(), *t, *test_);
    ev.submit(t->model().params(), record(p));
    const std::vector<float> short_params(10, 0.0f);
    EXPECT_THROW(ev.submit(short_params, record(p)), std::invalid_argument);
  }
  EXPECT_EQ(p.calls, 0);
}

TEST_F(BackgroundEval, AnExceptionFromDoneReachesTheCallerAndTheNextEvaluationStillRuns) {
  auto t = make_trainer();
  BackgroundEvaluator ev(model(), *t, *test_);
  ev.submit(t->model().params(), [](const EvalResult&, std::span<const float>) {
    throw std::runtime_error("metrics file: disk full");
  });
  EXPECT_THROW(ev.finish(), std::runtime_error);
  Published p;
  ev.submit(t->model().params(), record(p));
  ev.finish();
  EXPECT_EQ(p.calls, 1);
}

// The loop's records with background evaluations are those of inline ones
// (test figures, rounds, parameter hashes), and every one of them is written
// by the time run() returns.
TEST_F(BackgroundEval, TrainingLoopRecordsMatchInlineEvaluationsAndAreAllWrittenByTheEnd) {
  testing::TempDir dir("gossipd_bgeval");
  auto run = [&](bool background) {
    auto t = make_trainer();
    WorkerState state;
    MetricsRegistry metrics;
    const std::string path = dir.file(background ? "bg.jsonl" : "inline.jsonl");
    {
      JsonLinesWriter log(path);
      TrainingLoop loop("w0", *t, *test_, state, metrics, log, 2, /*on_evaluation=*/nullptr,
                        /*evals_per_epoch=*/4, background ? model() : nullptr);
      const size_t steps = data_parallel_steps(train_->size(), 1, t->options().batch);
      loop.run(steps, std::stop_token{}, [&](std::span<const uint32_t> idx) { return t->train_step(idx); });
    }
    return std::make_pair(testing::read_records(path), state.snapshot());
  };
  const auto [inline_records, inline_status] = run(false);
  const auto [bg_records, bg_status] = run(true);
  ASSERT_EQ(inline_records.size(), 8u);  // 2 epochs x 4
  ASSERT_EQ(bg_records.size(), inline_records.size());
  for (size_t i = 0; i < bg_records.size(); ++i) {
    const proto::EpochRecord& bg = bg_records[i];
    const proto::EpochRecord& in = inline_records[i];
    EXPECT_EQ(bg.test_accuracy(), in.test_accuracy()) << "record " << i;
    EXPECT_EQ(bg.test_loss(), in.test_loss()) << "record " << i;
    EXPECT_EQ(bg.round(), in.round()) << "record " << i;
    EXPECT_EQ(bg.progress(), in.progress()) << "record " << i;
    EXPECT_EQ(bg.loss(), in.loss()) << "record " << i;
  }
  EXPECT_EQ(bg_status.param_hash(), inline_status.param_hash());
  EXPECT_EQ(bg_status.test_accuracy(), inline_status.test_accuracy());
  EXPECT_EQ(bg_status.epoch(), 2u);
}

// --inject-step-slowdown 3: after each step the loop waits twice that
// step's compute (its time less its communication). Each step here computes
// at least 20 ms and communicates 10 ms (a CommTimer), so 5 steps take at
// least 5 x (3 x 20 + 10) ms: a lower bound no slow machine breaks. The
// record's compute per round counts the slowness and not the exchange.
TEST_F(BackgroundEval, AStepSlowdownWaitsKMinusOneTimesEachStepsComputeAfterIt) {
  testing::TempDir dir("gossipd_slowdown");
  auto t = make_trainer();
  WorkerState state;
  MetricsRegistry metrics;
  const std::string path = dir.file("slow.jsonl");
  constexpr int kSteps = 5;
  std::chrono::steady_clock::duration took{};
  {
    JsonLinesWriter log(path);
    TrainingLoop loop("w0", *t, *test_, state, metrics, log, 1, /*on_evaluation=*/nullptr);
    loop.set_step_slowdown(3);
    const auto start = std::chrono::steady_clock::now();
    loop.run(kSteps, std::stop_token{}, [&](std::span<const uint32_t> idx) {
      {
        TrainingLoop::CommTimer comm(loop);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return t->train_step(idx);
    });
    took = std::chrono::steady_clock::now() - start;
  }
  EXPECT_GE(took, kSteps * std::chrono::milliseconds(3 * 20 + 10));
  EXPECT_EQ(t->step_count(), static_cast<uint64_t>(kSteps));
  const auto records = testing::read_records(path);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_GE(records[0].compute_ms_per_round(), 3 * 20);
  EXPECT_GE(records[0].comm_ms_per_round(), 10);
  const double round_ms = std::chrono::duration<double, std::milli>(took).count() / kSteps;
  EXPECT_LE(records[0].compute_ms_per_round() + records[0].comm_ms_per_round(), round_ms);
}

// --emulate-step-ms 40: each step's compute (5 ms here, with 10 ms of
// communication beside it) is padded to 40 ms, so 5 steps take at least
// 5 x (40 + 10) ms; with --inject-step-slowdown 2 as well, the emulated
// machine is twice as slow: 5 x (80 + 10) ms. Lower bounds no slow machine
// breaks; the records count the padding as compute, not the exchange.
TEST_F(BackgroundEval, AnEmulatedStepPadsEachStepsComputeToItsTime) {
  for (const double slowdown : {1.0, 2.0}) {
    testing::TempDir dir("gossipd_emulated");
    auto t = make_trainer();
    WorkerState state;
    MetricsRegistry metrics;
    const std::string path = dir.file("emulated.jsonl");
    constexpr int kSteps = 5;
    std::chrono::steady_clock::duration took{};
    {
      JsonLinesWriter log(path);
      TrainingLoop loop("w0", *t, *test_, state, metrics, log, 1, /*on_evaluation=*/nullptr);
      loop.set_emulated_step(std::chrono::milliseconds(40));
      loop.set_step_slowdown(slowdown);
      const auto start = std::chrono::steady_clock::now();
      loop.run(kSteps, std::stop_token{}, [&](std::span<const uint32_t> idx) {
        {
          TrainingLoop::CommTimer comm(loop);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return t->train_step(idx);
      });
      took = std::chrono::steady_clock::now() - start;
    }
    const int emulated_ms = static_cast<int>(slowdown * 40);
    EXPECT_GE(took, kSteps * std::chrono::milliseconds(emulated_ms + 10)) << slowdown;
    const auto records = testing::read_records(path);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_GE(records[0].compute_ms_per_round(), emulated_ms) << slowdown;
    EXPECT_GE(records[0].comm_ms_per_round(), 10) << slowdown;
  }
}

// An observation (ObserveTimer: the consensus distance's allreduces) is
// counted as an evaluation is: out of the training time the records give
// and out of the step's compute. Each step here observes for 30 ms.
TEST_F(BackgroundEval, AnObservationIsNeitherTrainingTimeNorCompute) {
  testing::TempDir dir("gossipd_observe");
  auto t = make_trainer();
  WorkerState state;
  MetricsRegistry metrics;
  const std::string path = dir.file("observe.jsonl");
  constexpr int kSteps = 5;
  constexpr auto kObserve = std::chrono::milliseconds(30);
  std::chrono::steady_clock::duration took{};
  {
    JsonLinesWriter log(path);
    TrainingLoop loop("w0", *t, *test_, state, metrics, log, 1, /*on_evaluation=*/nullptr);
    const auto start = std::chrono::steady_clock::now();
    loop.run(kSteps, std::stop_token{}, [&](std::span<const uint32_t> idx) {
      const trainer::StepResult r = t->train_step(idx);
      const TrainingLoop::ObserveTimer observing(loop);
      std::this_thread::sleep_for(kObserve);
      return r;
    });
    took = std::chrono::steady_clock::now() - start;
  }
  const auto records = testing::read_records(path);
  ASSERT_EQ(records.size(), 1u);
  const double observed_s = kSteps * std::chrono::duration<double>(kObserve).count();
  EXPECT_GE(records[0].wall_seconds() - records[0].train_seconds(), observed_s);
  const double round_ms = std::chrono::duration<double, std::milli>(took).count() / kSteps;
  EXPECT_LE(records[0].compute_ms_per_round(), round_ms - 30);
  EXPECT_EQ(records[0].comm_ms_per_round(), 0);
}

}  // namespace

}  // namespace gossipd::daemon
