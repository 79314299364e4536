#pragma once

#include <string>
#include <vector>

#include "daemon/config/cli.h"  // CLI::App, declared
#include "trainer/models.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// The flags that describe local training, shared by `gossipd train` and
// (later) `gossipd run`. Defaults here are the documented defaults.
struct TrainFlags {
  std::string model = "mlp";
  std::vector<int> hidden;  // empty: model default
  std::string data;         // empty: the build's default dataset dir
  int epochs = 15;
  size_t batch = 64;
  float lr = 0.05f;
  float momentum = 0.9f;
  // --momentum auto: the mode sets the momentum by a rule of its own (a mode
  // with one says so in --momentum's help; the others refuse it).
  bool momentum_auto = false;
  bool momentum_given = false;  // --momentum on the command line (a mode's rule may be its default)
  bool nesterov = false;
  float weight_decay = 5e-4f;
  std::string optimizer = "sgd";  // sgd | lars
  float lars_eta = 0.001f;
  std::string lr_decay = "cosine";  // constant | cosine | step | poly
  float warmup_epochs = 0.0f;
  std::vector<float> lr_steps;
  float lr_gamma = 0.1f;
  float label_smoothing = 0.0f;
  uint64_t seed = 1;
  int threads = 1;
  size_t train_limit = 0;  // 0: all training samples
  size_t test_limit = 0;   // 0: all test samples
};

// --momentum's values: a number in [0, 0.999], or auto (gossipd run, gossipctl compare: a mode's own rule).
CLI::Validator momentum_value();

void add_train_flags(CLI::App& app, TrainFlags& flags);

trainer::ModelOptions model_options(const TrainFlags& flags);
// Throws std::invalid_argument for values that do not fit together.
trainer::TrainerOptions trainer_options(const TrainFlags& flags);
// --data; else $GOSSIPD_DATA_DIR where set (tests/run.sh points it at
// plain copies); else the Debian package's directory.
std::string data_dir(const TrainFlags& flags);

}  // namespace gossipd::daemon
