#include "daemon/cmd/train_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "daemon/config/cli.h"
#include "daemon/observe/metrics_log.h"
#include "proto/gossip.pb.h"
#include "trainer/dataset.h"

namespace gossipd::daemon {

CLI::App* add_train_command(CLI::App& app, TrainCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("train", "Train one worker locally, no network");
  add_train_flags(*cmd, o.train);
  cmd->add_option("--metrics-out", o.metrics_out, "Append one JSON line per epoch to this file");
  cmd->add_flag("--quiet", o.quiet, "No per-epoch progress lines");
  return cmd;
}

int run_train_command(const TrainCommandOptions& o) {
  const TrainFlags& f = o.train;
  if (f.momentum_auto)
    throw UsageError("--momentum auto is a distributed mode's rule (gossipd run --help); give a number here");
  set_blas_threads(f.threads);
  const trainer::TrainerOptions topts = trainer_options(f);
  JsonLinesWriter metrics(o.metrics_out);

  auto [train, test] = trainer::load_fashion_mnist_splits(data_dir(f), f.train_limit, f.test_limit);

  auto model = trainer::make_model(model_options(f), f.seed);
  const size_t params = model->params().size();
  trainer::Trainer t(std::move(model), train, topts);
  if (!o.quiet) {
    std::printf(
        "gossipd train: model %s (%zu parameters, %zu segments), %zu train / %zu test samples, "
        "batch %zu, %d epochs, %d BLAS thread(s)\n",
        f.model.c_str(), params, t.model().segments().size(), train.size(), test.size(), f.batch, f.epochs,
        f.threads);
    std::fflush(stdout);
  }
  const auto start = std::chrono::steady_clock::now();
  for (int e = 0; e < f.epochs; ++e) {
    trainer::EpochStats s = t.train_epoch(static_cast<uint32_t>(e));
    trainer::EvalResult ev = t.evaluate(test);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double sps = s.seconds > 0 ? static_cast<double>(s.samples) / s.seconds : 0.0;
    if (!o.quiet) {
      std::printf(
          "epoch %3d/%d  loss %.4f  train_acc %.4f  test_loss %.4f  test_acc %.4f  "
          "lr %.5f  %.0f samples/s  %.1f s\n",
          e + 1, f.epochs, s.loss, s.train_accuracy, ev.loss, ev.accuracy, s.last_lr, sps, wall);
      std::fflush(stdout);
    }
    proto::EpochRecord rec;
    rec.set_epoch(static_cast<uint32_t>(e + 1));
    rec.set_loss(s.loss);
    rec.set_train_accuracy(s.train_accuracy);
    rec.set_test_loss(ev.loss);
    rec.set_test_accuracy(ev.accuracy);
    rec.set_samples_per_second(sps);
    rec.set_wall_seconds(wall);
    rec.set_learning_rate(s.last_lr);
    rec.set_samples(static_cast<uint32_t>(s.samples));
    metrics.write(rec);
  }
  return kExitOk;
}

}  // namespace gossipd::daemon
