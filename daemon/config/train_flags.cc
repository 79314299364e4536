#include "daemon/config/train_flags.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "trainer/lr_schedule.h"

#ifndef GOSSIPD_FASHION_MNIST_DIR
#define GOSSIPD_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace gossipd::daemon {

// A number in [0, 0.999], or auto.
CLI::Validator momentum_value() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (v == "auto") return {};
        size_t used = 0;
        float m = -1;
        try {
          m = std::stof(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != v.size() || !(m >= 0.0f && m <= 0.999f))
          return "'" + v + "' is not in [0, 0.999] nor auto";
        return {};
      },
      "auto|[0, 0.999]");
}

void add_train_flags(CLI::App& app, TrainFlags& f) {
  app.add_option("--model", f.model, "Model to train")
      ->check(CLI::IsMember(trainer::model_names()))
      ->capture_default_str();
  app.add_option("--hidden", f.hidden, "Hidden dense widths, e.g. 256,128 (default: the model's)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  app.add_option("--data", f.data,
                 "Directory with the Fashion-MNIST IDX files, gzipped or plain (default: $GOSSIPD_DATA_DIR "
                 "where set)")
      ->default_str(GOSSIPD_FASHION_MNIST_DIR);
  app.add_option("--epochs", f.epochs, "Passes over the training data")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--batch", f.batch, "Mini-batch size per worker")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--lr", f.lr, "Base learning rate")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option_function<std::string>(
         "--momentum",
         [&f](const std::string& v) {
           f.momentum_given = true;
           f.momentum_auto = v == "auto";
           if (!f.momentum_auto) f.momentum = std::stof(v);
         },
         "Momentum (0 = plain SGD), or auto where the mode has a rule of its own")
      ->check(momentum_value())
      ->default_str("0.9");
  app.add_flag("--nesterov", f.nesterov, "Nesterov momentum");
  app.add_option("--weight-decay", f.weight_decay, "L2 weight decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--optimizer", f.optimizer, "Update rule")
      ->check(CLI::IsMember({"sgd", "lars"}))
      ->capture_default_str();
  app.add_option("--lars-eta", f.lars_eta, "LARS trust coefficient")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lr-decay", f.lr_decay, "Learning-rate decay after warm-up")
      ->check(CLI::IsMember({"constant", "cosine", "step", "poly"}))
      ->capture_default_str();
  app.add_option("--warmup-epochs", f.warmup_epochs, "Linear warm-up length in epochs")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--lr-steps", f.lr_steps, "Epochs at which step decay multiplies by --lr-gamma")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr-gamma", f.lr_gamma, "Step decay factor")
      ->check(CLI::Range(0.0f, 1.0f))
      ->capture_default_str();
  app.add_option("--label-smoothing", f.label_smoothing, "Label smoothing in [0, 1)")
      ->check(CLI::Range(0.0f, 0.99f))
      ->capture_default_str();
  app.add_option("--seed", f.seed, "Seed for initialisation and data order")->capture_default_str();
  app.add_option("--threads", f.threads, "OpenBLAS threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--train-limit", f.train_limit, "Use only the first N training samples (0 = all)");
  app.add_option("--test-limit", f.test_limit, "Use only the first N test samples (0 = all)");
}

trainer::ModelOptions model_options(const TrainFlags& f) {
  trainer::ModelOptions m;
  m.name = f.model;
  m.hidden = f.hidden;
  return trainer::resolve_model_options(m);
}

trainer::TrainerOptions trainer_options(const TrainFlags& f) {
  trainer::TrainerOptions o;
  o.batch = f.batch;
  o.label_smoothing = f.label_smoothing;
  o.optimizer.kind = f.optimizer == "lars" ? trainer::OptimizerKind::kLars : trainer::OptimizerKind::kSgd;
  o.optimizer.momentum = f.momentum;
  o.optimizer.nesterov = f.nesterov;
  o.optimizer.weight_decay = f.weight_decay;
  o.optimizer.lars_eta = f.lars_eta;
  o.schedule.base_lr = f.lr;
  o.schedule.decay = trainer::parse_decay(f.lr_decay);
  o.schedule.warmup_epochs = f.warmup_epochs;
  o.schedule.total_epochs = static_cast<float>(f.epochs);
  o.schedule.step_epochs = f.lr_steps;
  o.schedule.gamma = f.lr_gamma;
  o.sampler.seed = f.seed;
  if (f.warmup_epochs >= static_cast<float>(f.epochs)) {
    throw std::invalid_argument("--warmup-epochs must be shorter than --epochs");
  }
  return o;
}

std::string data_dir(const TrainFlags& f) {
  if (!f.data.empty()) return f.data;
  if (const char* env = std::getenv("GOSSIPD_DATA_DIR"); env && *env) return env;
  return GOSSIPD_FASHION_MNIST_DIR;
}

}  // namespace gossipd::daemon
