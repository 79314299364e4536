#include "protocol/group_exchange.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "protocol/errors.h"
#include "protocol/segment_inbox.h"

namespace gossipd::protocol {

using Clock = std::chrono::steady_clock;

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
  {
    std::lock_guard lock(mutex_);
    if (busy_) return false;
  }
  const topology::Groups groups(view, labels);
  const auto g = groups.group_of(node_.id());
  if (!g || groups.count() < 2) return false;
  check_segment_table(segments_, params.size());
  Job job{view, labels, step, {}};
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    if (groups.segment_owner(*g, s, spread_) != node_.id()) continue;
    const auto seg = params.subspan(segments_[s].offset, segments_[s].length);
    job.owned.emplace_back(s, std::vector<float>(seg.begin(), seg.end()));
  }
  if (job.owned.empty()) return false;
  {
    std::lock_guard lock(mutex_);
    job_ = std::move(job);
    busy_ = true;
  }
  wake_.notify_all();
  return true;
}

std::vector<FoldIn> AsyncGroupExchange::take() {
  std::lock_guard lock(mutex_);
  std::vector<FoldIn> out;
  for (auto& [s, f] : arrived_) out.push_back(std::move(f));
  arrived_.clear();
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
      run_round(job, round, stop);
    } catch (const Aborted&) {
      return;
    } catch (const std::exception& e) {  // a peer gone under our feet: the next round goes on
      spdlog::debug("node '{}': exchange round {} between groups failed: {}", node_.id(), round, e.what());
    }
    std::lock_guard lock(mutex_);
    busy_ = false;
    rounds_ = round;
  }
}

void AsyncGroupExchange::run_round(const Job& job, uint64_t round, std::stop_token stop) {
  const topology::Groups groups(job.view, job.labels);
  SegmentInbox inbox(node_, kTag, round);
  RoundStats stats;
  std::vector<std::pair<uint32_t, std::string>> from;  // segment, its sender
  for (const auto& [s, values] : job.owned) {
    const auto plan =
        topology::inter_group_exchange(groups, job.view.id(), node_.id(), options_.seed, round, s, spread_);
    if (!plan) continue;
    const size_t bytes =
        inbox.send(plan->send_to, s, values, std::nullopt, options_.segment_deadline, job.step);
    stats.segments_sent += bytes > 0;
    stats.bytes_sent += bytes;
    from.emplace_back(s, plan->receive_from);
  }
  const auto deadline = Clock::now() + options_.segment_deadline;
  for (const auto& [s, sender] : from) {
    const size_t length = segments_[s].length;
    auto msg = inbox.receive(sender, s, length, deadline, stop);
    if (stop.stop_requested()) throw Aborted(node_.id(), "exchange between compute groups");
    std::lock_guard lock(mutex_);
    if (!msg) {
      ++stats_.segments_skipped;
      continue;
    }
    FoldIn f{s, std::vector<float>(length), msg->envelope.sender_step()};
    std::memcpy(f.values.data(), msg->payload.at(0).data(), length * sizeof(float));
    arrived_[s] = std::move(f);
    ++stats_.segments_received;
    stats_.bytes_received += length * sizeof(float);
  }
  std::lock_guard lock(mutex_);
  stats_.segments_sent += stats.segments_sent;
  stats_.bytes_sent += stats.bytes_sent;
}

}  // namespace gossipd::protocol
