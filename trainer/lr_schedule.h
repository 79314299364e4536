#pragma once

#include <string>
#include <vector>

namespace gossipd::trainer {

enum class Decay { kConstant, kCosine, kStep, kPoly };

struct ScheduleOptions {
  float base_lr = 0.05f;
  float warmup_epochs = 0.0f;  // linear from base_lr * warmup_start to base_lr
  float warmup_start = 0.1f;   // fraction of base_lr at t = 0
  Decay decay = Decay::kCosine;
  float total_epochs = 1.0f;       // cosine / poly reach their end here
  std::vector<float> step_epochs;  // step: multiply by gamma at each of these
  float gamma = 0.1f;
  float power = 2.0f;     // poly exponent
  float final_lr = 0.0f;  // cosine / poly floor
};

// Learning rate as a function of (fractional) epoch: linear warm-up, then
// the chosen decay measured from the end of the warm-up.
class LrSchedule {
 public:
  explicit LrSchedule(ScheduleOptions options);
  float at(double epoch) const;
  const ScheduleOptions& options() const { return options_; }

 private:
  ScheduleOptions options_;
};

Decay parse_decay(const std::string& name);  // throws std::invalid_argument

}  // namespace gossipd::trainer
