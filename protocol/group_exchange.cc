#include "protocol/group_exchange.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "protocol/errors.h"
#include "protocol/segment_inbox.h"

namespace gossipd::protocol {

AsyncGroupExchange::AsyncGroupExchange(Node& node, SegmentTable segments, GossipOptions options,
                                       topology::GroupSpread spread)
    : node_(node),
      segments_(std::move(segments)),
      options_(std::move(options)),
      spread_(spread),
      thread_([this](std::stop_token stop) { loop(stop); }) {}

AsyncGroupExchange::~AsyncGroupExchange() {
  thread_.request_stop();
  wake_.notify_all();
}

bool AsyncGroupExchange::offer(const topology::View& view, const std::map<std::string, std::string>& labels,
                               uint64_t step, std::span<const float> params) {
  const topology::Groups groups(view, labels);
  const auto g = groups.group_of(node_.id());
  if (!g || groups.count() < 2) return false;
  std::vector<std::string> senders;
  for (size_t h = 0; h < groups.count(); ++h) {
    if (h == *g) continue;
    for (const auto& m : groups.members(h)) senders.push_back(m);
  }
  std::vector<uint32_t> owned;
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    if (groups.segment_owner(*g, s, spread_) == node_.id()) owned.push_back(s);
  }
  std::lock_guard lock(mutex_);
  senders_ = std::move(senders);
  owned_ = owned;
  if (busy_ || owned.empty()) return false;
  check_segment_table(segments_, params.size());
  Job job{view, labels, step, {}};
  for (uint32_t s : owned) {
    const auto seg = params.subspan(segments_[s].offset, segments_[s].length);
    job.owned.emplace_back(s, std::vector<float>(seg.begin(), seg.end()));
  }
  job_ = std::move(job);
  busy_ = true;
  wake_.notify_all();
  return true;
}

std::optional<FoldIn> AsyncGroupExchange::accept(const Message& m, const std::vector<uint32_t>& owned) {
  const uint32_t s = m.envelope.segment_id();
  const bool mine = std::find(owned.begin(), owned.end(), s) != owned.end();
  if (!mine || m.envelope.count() != segments_[s].length || m.envelope.offset() != 0 || m.payload.empty()) {
    // Not a segment this member owns now (its group changed since), or not whole.
    node_.reject_log().reject(m.envelope.sender(), RejectReason::kSegment,
                              "compute-group segment " + std::to_string(s) + " with " +
                                  std::to_string(m.envelope.count()) + " elements not expected here");
    return std::nullopt;
  }
  FoldIn f{s, std::vector<float>(segments_[s].length), m.envelope.sender_step()};
  std::memcpy(f.values.data(), m.payload.at(0).data(), f.values.size() * sizeof(float));
  return f;
}

std::vector<FoldIn> AsyncGroupExchange::take() {
  std::vector<std::string> senders;
  std::vector<uint32_t> owned;
  {
    std::lock_guard lock(mutex_);
    senders = senders_;
    owned = owned_;
  }
  std::map<uint32_t, FoldIn> newest;
  uint64_t received = 0, superseded = 0, bytes = 0;
  for (const auto& sender : senders) {
    for (const Message& m : node_.mailbox().drain(kTag, sender)) {
      auto f = accept(m, owned);
      if (!f) continue;
      ++received;
      bytes += f->values.size() * sizeof(float);
      auto [it, fresh] = newest.try_emplace(f->segment);
      if (!fresh) ++superseded;
      if (fresh || f->sender_step >= it->second.sender_step) it->second = std::move(*f);
    }
  }
  std::lock_guard lock(mutex_);
  stats_.segments_received += received;
  stats_.bytes_received += bytes;
  superseded_ += superseded;
  std::vector<FoldIn> out;
  for (auto& [s, f] : newest) out.push_back(std::move(f));
  return out;
}

RoundStats AsyncGroupExchange::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

uint64_t AsyncGroupExchange::rounds() const {
  std::lock_guard lock(mutex_);
  return rounds_;
}

uint64_t AsyncGroupExchange::superseded() const {
  std::lock_guard lock(mutex_);
  return superseded_;
}

void AsyncGroupExchange::loop(std::stop_token stop) {
  for (uint64_t round = 1;; ++round) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [&] { return job_.has_value(); })) return;
      job = std::move(*job_);
      job_.reset();
    }
    try {
      run_round(job, round);
    } catch (const std::exception& e) {  // a view without this member's partner: the next round goes on
      spdlog::debug("node '{}': exchange round {} between groups failed: {}", node_.id(), round, e.what());
    }
    std::lock_guard lock(mutex_);
    busy_ = false;
    rounds_ = round;
  }
}

void AsyncGroupExchange::run_round(const Job& job, uint64_t round) {
  const topology::Groups groups(job.view, job.labels);
  // Left open: the round numbers of this tag are each sender's own, so
  // finishing one would drop other members' copies that are still due.
  SegmentInbox inbox(node_, kTag, round, /*finish=*/false);
  RoundStats stats;
  for (const auto& [s, values] : job.owned) {
    const auto plan =
        topology::inter_group_exchange(groups, job.view.id(), node_.id(), options_.seed, round, s, spread_);
    if (!plan) continue;
    const size_t bytes =
        inbox.send(plan->send_to, s, values, std::nullopt, options_.segment_deadline, job.step);
    stats.segments_sent += bytes > 0;
    stats.segments_skipped += bytes == 0;
    stats.bytes_sent += bytes;
  }
  std::lock_guard lock(mutex_);
  stats_.segments_sent += stats.segments_sent;
  stats_.segments_skipped += stats.segments_skipped;
  stats_.bytes_sent += stats.bytes_sent;
}

}  // namespace gossipd::protocol
