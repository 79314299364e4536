#include "daemon/sim/time_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "protocol/collectives.h"

namespace gossipd::daemon {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// A message as the receiver's link sees it: when its first byte could come
// (the sender's link reached it) and when its last could (the sender's rate).
struct Incoming {
  double first = 0;
  double last = 0;
  uint64_t bytes = 0;
  uint32_t from = 0;
  uint64_t index = 0;  // in the stage, for the drop draw
};

// splitmix64: the drop draw of (seed, round, message).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

TimeModel::TimeModel(TimeModelOptions options) : o_(std::move(options)) {
  const size_t n = o_.links.size();
  if (o_.compute.empty()) o_.compute.assign(n, 1.0);
  if (o_.compute.size() != n) throw std::invalid_argument("time model: one compute factor per member");
  for (const LinkModel& l : o_.links) {
    if (!(l.bytes_per_s > 0))
      throw std::invalid_argument("time model: a link's bandwidth must be above zero");
  }
  clock_.assign(n, 0.0);
  waited_.assign(n, 0.0);
  up_.assign(n, LinkSide{0, o_.burst_bytes});
  down_.assign(n, LinkSide{0, o_.burst_bytes});
  owed_.assign(n, {});
  last_receivers_.assign(n, {});
}

double LinkSide::send(double start, double bytes, double rate, double burst) {
  tokens = std::min(burst, tokens + std::max(0.0, start - free) * rate);
  const double at_once = std::min(tokens, bytes);
  tokens -= at_once;
  free = start + (bytes - at_once) / rate;
  return free;
}

ModelledRound TimeModel::run_round(uint64_t round, const std::vector<TrafficStage>& stages) {
  for (size_t i = 0; i < clock_.size(); ++i) clock_[i] += o_.step_s * o_.compute[i];
  ModelledRound r;
  for (const TrafficStage& st : stages) {
    if (st.kind == TrafficStage::Kind::kAllreduce) {
      allreduces(st, r);
    } else {
      messages(round, st, r);
    }
  }
  r.slowest_s = clock_.empty() ? 0 : *std::max_element(clock_.begin(), clock_.end());
  return r;
}

bool TimeModel::dropped(uint64_t round, uint64_t message) const {
  if (o_.drop_rate <= 0) return false;
  const uint64_t draw = mix(mix(o_.seed ^ mix(round)) ^ message);
  return static_cast<double>(draw >> 11) * 0x1.0p-53 < o_.drop_rate;
}

std::vector<double> TimeModel::pace_gates(const TrafficStage& st) {
  std::vector<double> gate = clock_;
  if (st.pace != TrafficStage::Pace::kAfterLast) return gate;
  const double renudge = o_.deadline_s / 8;
  for (size_t i = 0; i < gate.size(); ++i) {
    for (uint32_t k : last_receivers_[i])
      gate[i] = std::max(gate[i], std::min(clock_[k] + o_.links[k].latency_s, clock_[i] + renudge));
    last_receivers_[i].clear();
  }
  for (const Transfer& m : st.messages) last_receivers_[m.from].push_back(m.to);
  return gate;
}

void TimeModel::messages(uint64_t round, const TrafficStage& st, ModelledRound& r) {
  const size_t n = clock_.size();
  // Each sender's link sends its messages back to back from when it is free.
  const std::vector<double> gate = pace_gates(st);
  std::vector<std::vector<Incoming>> in(n);
  for (uint64_t k = 0; k < st.messages.size(); ++k) {
    const Transfer& m = st.messages[k];
    double first = std::max(up_[m.from].free, gate[m.from]);
    if (st.pace != TrafficStage::Pace::kNone)
      first = std::max(first, clock_[m.to] + o_.links[m.to].latency_s);
    const double bytes = static_cast<double>(m.bytes);
    const double last = up_[m.from].send(first, bytes, o_.links[m.from].bytes_per_s, o_.burst_bytes);
    in[m.to].push_back({first, last, m.bytes, m.from, k});
    r.bytes_sent += m.bytes;
  }
  // Each receiver's link takes them one after the other, as they come.
  std::vector<std::vector<double>> arrivals(n);
  for (size_t k = 0; k < n; ++k) {
    std::sort(in[k].begin(), in[k].end(),
              [](const Incoming& a, const Incoming& b) { return a.last < b.last; });
    LinkSide& down = down_[k];
    for (const Incoming& m : in[k]) {
      const double start = std::max(down.free, m.first);
      down.free = std::max(
          down.send(start, static_cast<double>(m.bytes), o_.links[k].bytes_per_s, o_.burst_bytes), m.last);
      arrivals[k].push_back(dropped(round, m.index) ? kNever : down.free + o_.links[m.from].latency_s);
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (st.folded_next_round) std::swap(arrivals[k], owed_[k]);  // wait for the last round's
    const double start = clock_[k], deadline = start + o_.deadline_s;
    double end = start;
    for (double a : arrivals[k]) {
      r.skipped += a > deadline;
      end = std::max(end, std::min(a, deadline));
    }
    waited_[k] += end - start;
    clock_[k] = end;
  }
}

namespace {

// An allreduce's time and the bytes each member sends, as its schedule runs.
struct AllreduceCost {
  double steps = 0;       // latencies on the critical path
  double bytes_each = 0;  // what each member sends, in order: the link's time
};

AllreduceCost allreduce_cost(uint64_t bytes, size_t n, const protocol::CodecSpec& codec) {
  const double p = static_cast<double>(n);
  if (!codec.lossless()) {  // CompressedAllreduce: always the ring, each block in the codec
    const double b = static_cast<double>(protocol::encoded_bytes(codec, bytes / sizeof(float)));
    return {2 * (p - 1), 2 * (p - 1) / p * b};
  }
  const double b = static_cast<double>(bytes);
  const double log_p = std::log2(p);
  switch (protocol::allreduce_schedule(bytes / sizeof(float), n)) {
    case protocol::AllreduceSchedule::kDoubling:
      return {log_p, log_p * b};
    case protocol::AllreduceSchedule::kButterfly:
      return {2 * log_p, 2 * (p - 1) / p * b};
    case protocol::AllreduceSchedule::kRing:
      break;
  }
  return {2 * (p - 1), 2 * (p - 1) / p * b};
}

}  // namespace

void TimeModel::allreduces(const TrafficStage& st, ModelledRound& r) {
  for (const auto& group : st.groups) {
    const size_t n = group.size();
    if (n < 2) continue;
    double start = 0, latency = 0, slowest = kNever;
    for (uint32_t i : group) {
      start = std::max({start, clock_[i], up_[i].free, down_[i].free});
      latency = std::max(latency, o_.links[i].latency_s);
      slowest = std::min(slowest, o_.links[i].bytes_per_s);
    }
    const AllreduceCost c = allreduce_cost(st.allreduce_bytes, n, st.allreduce_codec);
    const double end = start + c.steps * latency + c.bytes_each / slowest;
    for (uint32_t i : group) {
      waited_[i] += end - clock_[i];
      clock_[i] = up_[i].free = down_[i].free = end;
    }
    r.bytes_sent += static_cast<uint64_t>(c.bytes_each) * n;
  }
}

}  // namespace gossipd::daemon
