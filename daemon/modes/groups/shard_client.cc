#include "daemon/modes/groups/shard_client.h"

#include <algorithm>
#include <cstring>

#include "daemon/modes/groups/shard_wire.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

ShardClient::ShardClient(protocol::Node& node, AliveMembers alive, ShardStore& store, ShardService& service,
                         std::string group, ShardClientOptions options)
    : node_(node),
      alive_(std::move(alive)),
      store_(store),
      service_(service),
      group_(std::move(group)),
      options_(options),
      versions_(store.layout().count(), 0),
      feedback_(options.codec) {
  if (options_.attack) attack_.emplace(*options_.attack);
}

std::string ShardClient::owner_of(size_t shard) const { return store_.layout().owner(shard, alive_()); }

std::span<const float> ShardClient::piece(std::span<const float> v, size_t shard) const {
  const auto r = store_.layout().range(shard);
  return v.subspan(r.begin, r.size());
}

bool ShardClient::local(const Step& s, size_t shard) {
  const auto r = store_.layout().range(shard);
  const ShardPush p{group_,    s.step, s.pushed_at(shard, versions_), s.lr, shard, piece(s.grads, shard),
                    node_.id()};
  PushOutcome o = store_.push(p);
  if (o == PushOutcome::kUnseeded) {
    store_.seed(shard, s.params.subspan(r.begin, r.size()), versions_[shard]);
    o = store_.push(p);
  }
  if (o != PushOutcome::kApplied && o != PushOutcome::kDuplicate && o != PushOutcome::kRefused) return false;
  const auto version = store_.read(shard, s.params.subspan(r.begin, r.size()));
  if (!version) return false;
  versions_[shard] = *version;
  return true;
}

void ShardClient::push(const Step& s, Pending& p) {
  p.resend = Clock::now() + p.backoff;
  if (p.owner == node_.id()) return;  // not in this member's store yet: tried again when due
  ShardMessage m{proto::SHARD_PUSH, s.step, static_cast<uint32_t>(p.shard), {}};
  m.note.set_version(s.pushed_at(p.shard, versions_));
  m.note.set_learning_rate(s.lr);
  if (options_.codec.lossless()) {
    send_shard(node_, p.owner, options_.tags.request, m, outgoing(s, p.shard), options_.send_timeout);
    return;
  }
  if (!p.push.bytes) {  // encoded once: its rounding is carried whether this send or a resend lands
    const size_t offset = store_.layout().range(p.shard).begin;
    const std::span<const float> sent = outgoing(s, p.shard);
    p.push = feedback_.encode(offset, sent);
    feedback_.sent(offset, sent, p.push);
  }
  send_encoded_shard(node_, p.owner, options_.tags.request, m, p.push, options_.send_timeout);
}

std::span<const float> ShardClient::outgoing(const Step& s, size_t shard) {
  const std::span<const float> grad = piece(s.grads, shard);
  if (!attack_) return grad;
  return attack_->apply(static_cast<uint32_t>(shard), s.step, grad);
}

void ShardClient::seed(const Step& s, const Pending& p) {
  ShardMessage m{proto::SHARD_SEED, s.step, static_cast<uint32_t>(p.shard), {}};
  m.note.set_version(versions_[p.shard]);
  send_shard(node_, p.owner, options_.tags.request, m, piece(s.params, p.shard), options_.send_timeout);
}

void ShardClient::exchange(uint64_t step, float lr, std::pair<size_t, size_t> shards,
                           std::span<const float> grads, std::span<float> params, std::stop_token stop,
                           std::span<const uint64_t> computed_on) {
  const Step s{step, lr, grads, params, computed_on};
  service_.follow_view();
  std::vector<Pending> pending;
  std::vector<size_t> own;
  for (size_t j = shards.first; j < shards.second; ++j) {
    Pending p{j, owner_of(j), {}, Clock::now() + options_.give_up, options_.first_resend};
    if (p.owner == node_.id()) {
      own.push_back(j);  // applied below, while the other owners apply theirs
      continue;
    }
    push(s, p);
    pending.push_back(p);
  }
  for (size_t j : own) {
    if (local(s, j)) continue;
    Pending p{j, node_.id(), {}, Clock::now() + options_.give_up, options_.first_resend};
    push(s, p);
    pending.push_back(p);
  }
  while (!pending.empty()) {
    const auto due = std::min_element(pending.begin(), pending.end(),
                                      [](const Pending& a, const Pending& b) { return a.resend < b.resend; });
    auto m = node_.mailbox().pop_tag(options_.tags.answer, due->resend, stop);
    if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "pulling parameter shards");
    if (m) {
      take(s, *m, pending);
    } else {
      resend_due(s, pending);
    }
  }
}

void ShardClient::share_versions(protocol::Group& ring) {
  // Two floats a version, 24 bits each: exact below 2^48.
  std::vector<float> v(2 * versions_.size());
  for (size_t j = 0; j < versions_.size(); ++j) {
    v[2 * j] = static_cast<float>(versions_[j] >> 24);
    v[2 * j + 1] = static_cast<float>(versions_[j] & 0xFFFFFF);
  }
  std::vector<size_t> counts(ring.size());
  for (size_t r = 0; r < ring.size(); ++r) {
    const auto [first, last] = store_.layout().slice(r, ring.size());
    counts[r] = 2 * (last - first);
  }
  protocol::Allgather(ring, v, counts).run();
  for (size_t j = 0; j < versions_.size(); ++j)
    versions_[j] = (static_cast<uint64_t>(v[2 * j]) << 24) | static_cast<uint64_t>(v[2 * j + 1]);
}

bool ShardClient::take(const Step& s, const protocol::Message& m, std::vector<Pending>& pending) {
  const auto msg = read_shard(node_, m, options_.codec);
  if (!msg || msg->step != s.step) return false;  // a late answer to an earlier step's resend
  auto p = std::find_if(pending.begin(), pending.end(), [&](const Pending& x) {
    return x.shard == msg->shard && x.owner == m.envelope.sender();
  });
  if (p == pending.end()) return false;  // answered already (a repeat)
  if (msg->kind == proto::SHARD_UNSEEDED) {
    seed(s, *p);
    push(s, *p);  // the owner takes the seed first: one pipe, in order
    return false;
  }
  std::vector<float> scratch;  // only where the frame cannot be read in place
  const std::span<const float> values = shard_view(m, scratch);
  const auto r = store_.layout().range(p->shard);
  if (msg->kind != proto::SHARD_FRESH || values.size() != r.size()) {
    node_.reject_log().reject(m.envelope.sender(), protocol::RejectReason::kSizeMismatch,
                              "answer for shard " + std::to_string(p->shard) + " of " +
                                  std::to_string(values.size()) + " elements");
    return false;
  }
  std::copy(values.begin(), values.end(), s.params.begin() + static_cast<std::ptrdiff_t>(r.begin));
  versions_[p->shard] = msg->note.version();
  pending.erase(p);
  return true;
}

void ShardClient::resend_due(const Step& s, std::vector<Pending>& pending) {
  const auto now = Clock::now();
  for (auto it = pending.begin(); it != pending.end();) {
    Pending& p = *it;
    if (p.resend > now) {
      ++it;
      continue;
    }
    const std::string owner = owner_of(p.shard);
    if (owner != p.owner) {  // the owner left: its shard moved
      p.owner = owner;
      p.give_up = now + options_.give_up;
      p.backoff = options_.first_resend;
    } else if (now >= p.give_up) {
      throw protocol::PeerTimeout(node_.id(), p.owner, options_.give_up, "a parameter shard push");
    }
    if (p.owner == node_.id() && local(s, p.shard)) {
      it = pending.erase(it);
      continue;
    }
    ++resends_;
    p.backoff = std::min(p.backoff * 2, std::chrono::milliseconds(2000));
    push(s, p);
    ++it;
  }
}

}  // namespace gossipd::daemon
