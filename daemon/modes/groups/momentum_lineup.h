#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gossipd::daemon {

// The momentum a parameter shard's update sequence shows, fitted as
// Mitliagkas et al. model asynchrony ("Asynchrony begets momentum"):
//   Δ_t = μ·Δ_{t-1} − c·∇f(w_t)
// where Δ_t = w_{t+1} − w_t is the shard's t-th update and ∇f(w_t) the
// gradient computed ON version t — not the (stale) gradient update t
// applied, which a regression cannot see momentum in. Each gradient is lined
// up with the model it was computed on: a push that pulled version t brings
// ∇f(w_t), whenever it arrives; the updates of the last `window` versions
// are kept to meet it. μ and c are the least-squares fit over every
// coordinate of every lined-up gradient. With plain momentum m and one
// group it is m; with g equally fast groups Omnivore's model puts the
// asynchrony's share at 1 − 1/g.
//
// Every `every`-th version is lined up (its update and the one before kept,
// the gradients computed on it fitted), not all: keeping and fitting every
// update cost the owner three passes over the shard per push, under the
// store's lock, on the pushing group's wait (about 3 ms of a 2-worker
// groups' round at hidden 1024: edce675). The fit still takes every
// coordinate of the versions it lines up.
class MomentumLineup {
 public:
  static constexpr size_t kEvery = 8;

  // The normal equations' sums, which shards add up.
  struct Sums {
    double aa = 0, ab = 0, bb = 0, ya = 0, yb = 0;  // a = Δ_{t-1}, b = ∇f(w_t), y = Δ_t
    uint64_t lined_up = 0;
    void add(const Sums& o);
    // μ, once the fit is determined.
    std::optional<double> momentum() const;
  };

  explicit MomentumLineup(size_t every = kEvery, size_t window = 32)
      : every_(every == 0 ? 1 : every), window_(window), deltas_(window) {}

  // Version `version` becomes version + 1: `before` is its values (kept in
  // the window's slot, whose storage is reused), then `after` the new ones.
  void moving(uint64_t version, std::span<const float> before);
  void moved(uint64_t version, std::span<const float> after);
  // A gradient computed on version `version`.
  void gradient_at(uint64_t version, std::span<const float> grad);
  const Sums& sums() const { return sums_; }

 private:
  struct Delta {
    uint64_t version = UINT64_MAX;  // UINT64_MAX: empty
    std::vector<float> values;
  };
  const Delta* delta(uint64_t version) const;
  // A lined-up version, and the one before it, whose updates are kept.
  bool lined_up(uint64_t version) const { return version % every_ == 0; }
  bool kept(uint64_t version) const { return lined_up(version) || lined_up(version + 1); }

  size_t every_;
  size_t window_;
  std::vector<Delta> deltas_;  // by version modulo the window
  Sums sums_;
};

}  // namespace gossipd::daemon
