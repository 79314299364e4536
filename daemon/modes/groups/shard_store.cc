#include "daemon/modes/groups/shard_store.h"

#include <algorithm>

namespace gossipd::daemon {

ShardStore::ShardStore(ShardLayout layout, trainer::OptimizerOptions optimizer, size_t lineup_every)
    : layout_(std::move(layout)), options_(optimizer), lineup_every_(lineup_every) {}

ShardStore::Shard ShardStore::make_shard(size_t shard) const {
  const size_t n = layout_.range(shard).size();
  Shard s;
  s.lineup = MomentumLineup(lineup_every_);
  s.optimizer = std::make_unique<trainer::Optimizer>(
      options_, std::vector<trainer::ParamSegment>{{"shard " + std::to_string(shard), 0, n}}, n);
  return s;
}

void ShardStore::set_momentum(float momentum) {
  std::lock_guard lock(mutex_);
  options_.momentum = momentum;
  for (auto& [j, s] : shards_) s.optimizer->set_momentum(momentum);
}

float ShardStore::momentum() const {
  std::lock_guard lock(mutex_);
  return options_.momentum;
}

void ShardStore::own(const std::vector<size_t>& shards) {
  std::lock_guard lock(mutex_);
  std::erase_if(shards_, [&](const auto& kv) {
    return std::find(shards.begin(), shards.end(), kv.first) == shards.end();
  });
  for (size_t j : shards) {
    if (!shards_.contains(j)) shards_.emplace(j, make_shard(j));
  }
  if (clip_) clip_->keep(shards);
}

bool ShardStore::owns(size_t shard) const {
  std::lock_guard lock(mutex_);
  return shards_.contains(shard);
}

bool ShardStore::seed(size_t shard, std::span<const float> values, uint64_t version) {
  std::lock_guard lock(mutex_);
  auto it = shards_.find(shard);
  if (it == shards_.end() || !it->second.values.empty() || values.size() != layout_.range(shard).size())
    return false;
  it->second.values.assign(values.begin(), values.end());
  it->second.version = version;
  if (version > 0) ++stats_.seeded_later;
  return true;
}

PushOutcome ShardStore::push(const ShardPush& p) {
  const PushOutcome o = apply_only(p);
  if (o == PushOutcome::kApplied) line_up(p);
  return o;
}

void ShardStore::line_up(const ShardPush& p) {
  std::lock_guard lock(mutex_);
  auto it = shards_.find(p.shard);
  if (it == shards_.end() || it->second.clipped.erase({p.group, p.step})) return;  // not what was applied
  it->second.lineup.gradient_at(p.version, p.grad);
}

PushOutcome ShardStore::apply_only(const ShardPush& p) {
  std::lock_guard lock(mutex_);
  auto it = shards_.find(p.shard);
  if (it == shards_.end()) {
    ++stats_.not_owned;
    return PushOutcome::kNotOwned;
  }
  if (p.grad.size() != layout_.range(p.shard).size()) {
    ++stats_.mis_sized;
    return PushOutcome::kMisSized;
  }
  if (it->second.values.empty()) return PushOutcome::kUnseeded;
  return apply(it->second, p);
}

PushOutcome ShardStore::apply(Shard& s, const ShardPush& p) {
  auto [last, fresh] = s.last_step.try_emplace(p.group, 0);
  if (!fresh && p.step <= last->second) {
    ++stats_.duplicate;
    return PushOutcome::kDuplicate;
  }
  last->second = p.step;
  if (clip_ && clip_->named(p.from)) {
    ++stats_.refused;
    return PushOutcome::kRefused;
  }
  if (p.version > s.version) {  // pulled from an owner that left, after the copy this one was seeded from
    stats_.lost += p.version - s.version;
    s.version = p.version;
  }
  const uint64_t tau = s.version - p.version;
  ++stats_.staleness[std::min<uint64_t>(tau, kStalenessBuckets - 1)];
  stats_.staleness_sum += static_cast<double>(tau);
  stats_.staleness_max = std::max(stats_.staleness_max, tau);
  const std::span<const float> grad = clip_ ? clip_->centre(p.from, p.shard, p.grad, s.values) : p.grad;
  if (clip_ && clip_->clipped()) {
    ++stats_.clipped;
    s.clipped.insert({p.group, p.step});
  }
  s.lineup.moving(s.version, s.values);
  s.optimizer->step(s.values, grad, p.lr);
  s.lineup.moved(s.version, s.values);
  ++s.version;
  ++stats_.applied;
  return PushOutcome::kApplied;
}

std::optional<uint64_t> ShardStore::read(size_t shard, std::span<float> out) const {
  std::lock_guard lock(mutex_);
  auto it = shards_.find(shard);
  if (it == shards_.end() || it->second.values.empty() || out.size() != it->second.values.size())
    return std::nullopt;
  std::copy(it->second.values.begin(), it->second.values.end(), out.begin());
  return it->second.version;
}

ShardStats ShardStore::stats() const {
  std::lock_guard lock(mutex_);
  ShardStats out = stats_;
  out.owned.clear();
  out.fit = {};
  for (const auto& [j, s] : shards_) {
    out.owned.push_back(static_cast<uint32_t>(j));
    out.fit.add(s.lineup.sums());
  }
  return out;
}

void ShardStore::defend(protocol::ClipSpec spec, const std::string& self) {
  std::lock_guard lock(mutex_);
  clip_ = std::make_unique<ShardClip>(spec, self);
}

void ShardStore::refused(const std::string& from) {
  std::lock_guard lock(mutex_);
  if (clip_) clip_->refused(from);
}

std::vector<std::string> ShardStore::end_round() {
  std::lock_guard lock(mutex_);
  return clip_ ? clip_->end_round() : std::vector<std::string>{};
}

std::map<std::string, protocol::PeerClipping> ShardStore::pushers() const {
  std::lock_guard lock(mutex_);
  return clip_ ? clip_->pushers() : std::map<std::string, protocol::PeerClipping>{};
}

}  // namespace gossipd::daemon
