#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gossipd::daemon {

// The momentum a replica's update sequence shows, as Mitliagkas et al. fit
// it ("Asynchrony begets momentum"): Δw_{t+1} = μ·Δw_t − η_t·∇f_t, where
// Δw_t is what the model moved in step t (its update and whatever else
// changed it, e.g. a compute group folding in other groups' segments) and
// ∇f_t the gradient step t applied, weight decay included. μ is the least
// squares fit over every coordinate of every step since the first two:
// μ = Σ⟨Δw_{t+1} + η_t·∇f_t, Δw_t⟩ / Σ|Δw_t|². With plain momentum m and no
// asynchrony it is m (SGD's velocity makes Δw_{t+1} = m·Δw_t − η·g exactly
// while η is constant); what the asynchrony adds is μ − m. Nesterov and
// LARS updates are not of this form.
class MomentumFit {
 public:
  // After step t: the parameters now, the gradient the step applied (before
  // weight decay), its learning rate and the weight decay.
  void add(std::span<const float> params, std::span<const float> grads, float lr, float weight_decay);
  // μ, once two steps have moved the model.
  std::optional<double> momentum() const;
  uint64_t steps() const { return steps_; }

 private:
  std::vector<float>
      before_;                // the parameters after the previous step (where this step's gradient was taken)
  std::vector<float> moved_;  // Δw of the previous step
  double num_ = 0;
  double den_ = 0;
  uint64_t steps_ = 0;  // steps fitted
};

}  // namespace gossipd::daemon
