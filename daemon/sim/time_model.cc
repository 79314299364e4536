#include "daemon/sim/time_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "protocol/collectives/collectives.h"

namespace gossipd::daemon {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// A message as the receiver's link sees it: when its first byte could come
// (the sender's link reached it) and when its last could (the sender's rate).
struct Incoming {
  double first = 0;
  double last = 0;
  uint64_t bytes = 0;
  uint64_t index = 0;  // in the stage: its Transfer, and the drop draw
  double latency_s = 0;
};

// splitmix64: the drop draw of (seed, round, message).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// TCP packets of a message (a 1448-byte payload each), as gossipd run
// --wan's transport counts them.
double tcp_packets(uint64_t bytes) { return std::ceil(static_cast<double>(bytes + 1) / 1448.0); }

// The chance that a message of `bytes` loses one of its packets.
double message_loss(uint64_t bytes, double loss) { return 1 - std::pow(1 - loss, tcp_packets(bytes)); }

void check_wan(const WanModel& w, size_t hosts) {
  if (w.empty()) return;
  const size_t regions = w.paths.size();
  if (w.region.size() != hosts) throw std::invalid_argument("time model: a WAN needs each host's region");
  for (uint32_t r : w.region) {
    if (r >= regions) throw std::invalid_argument("time model: a host in a region with no paths");
  }
  for (const auto& row : w.paths) {
    if (row.size() != regions) throw std::invalid_argument("time model: a WAN's paths are regions x regions");
    for (const WanPath& p : row) {
      if (!(p.bytes_per_s > 0 && p.delay_s >= 0 && p.loss >= 0 && p.loss < 1))
        throw std::invalid_argument("time model: a WAN path needs a rate, a delay >= 0 and a loss in [0, 1)");
    }
  }
  if (!(w.receive_bytes_per_s > 0)) throw std::invalid_argument("time model: a WAN host receives at no rate");
}

}  // namespace

TimeModel::TimeModel(TimeModelOptions options) : o_(std::move(options)) {
  if (o_.host.empty()) {
    for (uint32_t i = 0; i < o_.links.size(); ++i) o_.host.push_back(i);
  }
  const size_t n = o_.host.size(), hosts = o_.links.size();
  if (o_.compute.empty()) o_.compute.assign(n, 1.0);
  if (o_.compute.size() != n) throw std::invalid_argument("time model: one compute factor per member");
  for (uint32_t h : o_.host) {
    if (h >= hosts) throw std::invalid_argument("time model: a member on a host with no link");
  }
  for (const LinkModel& l : o_.links) {
    if (!(l.bytes_per_s > 0))
      throw std::invalid_argument("time model: a link's bandwidth must be above zero");
  }
  if (hosts < n && !(o_.host_link.bytes_per_s > 0))
    throw std::invalid_argument("time model: members share a host whose own link has no bandwidth");
  check_wan(o_.wan, hosts);
  clock_.assign(n, 0.0);
  waited_.assign(n, 0.0);
  for (size_t side = 0; side < hosts + n + hosts * o_.wan.paths.size(); ++side) {
    up_.push_back(LinkSide{0, burst(side)});
    down_.push_back(LinkSide{0, burst(side)});
  }
  owed_.assign(n, {});
  last_receivers_.assign(n, {});
}

TimeModel::Route TimeModel::route(uint32_t from, uint32_t to) const {
  const uint32_t a = o_.host[from], b = o_.host[to];
  if (a != b && o_.wan.empty()) return {a, b, o_.links[a].latency_s};
  if (a != b) {
    const WanPath& p = o_.wan.paths[o_.wan.region[a]][o_.wan.region[b]];
    return {a, b, p.delay_s, wan_class(a, o_.wan.region[b]), p.loss};
  }
  const size_t hosts = o_.links.size();
  return {hosts + from, hosts + to, o_.host_link.latency_s};
}

size_t TimeModel::wan_class(uint32_t host, uint32_t region) const {
  return o_.links.size() + clock_.size() + host * o_.wan.paths.size() + region;
}

double TimeModel::rate(size_t side) const {
  const size_t hosts = o_.links.size(), first_class = hosts + clock_.size();
  if (side < hosts) return o_.links[side].bytes_per_s;
  if (side < first_class) return o_.host_link.bytes_per_s;
  const size_t regions = o_.wan.paths.size(), host = (side - first_class) / regions;
  return o_.wan.paths[o_.wan.region[host]][(side - first_class) % regions].bytes_per_s;
}

double TimeModel::receive_rate(size_t side) const {
  return !o_.wan.empty() && side < o_.links.size() ? o_.wan.receive_bytes_per_s : rate(side);
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

bool TimeModel::retransmitted(uint64_t round, uint64_t message, uint64_t bytes, double loss) const {
  if (loss <= 0) return false;
  const uint64_t draw = mix(mix(mix(o_.seed) ^ mix(round)) ^ mix(message));  // apart from dropped's
  return static_cast<double>(draw >> 11) * 0x1.0p-53 < message_loss(bytes, loss);
}

std::vector<double> TimeModel::pace_gates(const TrafficStage& st) {
  std::vector<double> gate = clock_;
  if (st.pace != TrafficStage::Pace::kAfterLast) return gate;
  const double renudge = o_.deadline_s / 8;
  for (size_t i = 0; i < gate.size(); ++i) {
    for (uint32_t k : last_receivers_[i])
      gate[i] = std::max(gate[i], std::min(clock_[k] + route(k, i).latency_s, clock_[i] + renudge));
    last_receivers_[i].clear();
  }
  for (const Transfer& m : st.messages) last_receivers_[m.from].push_back(m.to);
  return gate;
}

void TimeModel::messages(uint64_t round, const TrafficStage& st, ModelledRound& r) {
  const size_t n = clock_.size();
  // Each sender's side of a link sends its messages back to back from when it is free.
  const std::vector<double> gate = pace_gates(st);
  std::vector<std::vector<Incoming>> in(down_.size());
  for (uint64_t k = 0; k < st.messages.size(); ++k) {
    const Transfer& m = st.messages[k];
    const Route way = route(m.from, m.to);
    double first = std::max(up_[way.up].free, gate[m.from]);
    if (way.via != kNoSide) first = std::max(first, up_[way.via].free);
    if (st.pace != TrafficStage::Pace::kNone)
      first = std::max(first, clock_[m.to] + route(m.to, m.from).latency_s);
    const double bytes = static_cast<double>(m.bytes);
    double last = up_[way.up].send(first, bytes, rate(way.up), burst(way.up));
    if (way.via != kNoSide) last = std::max(last, up_[way.via].send(first, bytes, rate(way.via), 0));
    const double latency = way.latency_s * (retransmitted(round, k, m.bytes, way.loss) ? 3 : 1);
    in[way.down].push_back({first, last, m.bytes, k, latency});
    r.bytes_sent += m.bytes;
  }
  // Each receiving side takes them one after the other, as they come.
  std::vector<std::vector<Arrival>> arrivals(n);
  for (size_t d = 0; d < in.size(); ++d) {
    std::sort(in[d].begin(), in[d].end(),
              [](const Incoming& a, const Incoming& b) { return a.last < b.last; });
    LinkSide& down = down_[d];
    for (const Incoming& m : in[d]) {
      const double start = std::max(down.free, m.first);
      down.free = std::max(down.send(start, static_cast<double>(m.bytes), receive_rate(d), burst(d)), m.last);
      const Transfer& t = st.messages[m.index];
      const double at = dropped(round, m.index) ? kNever : down.free + m.latency_s;
      arrivals[t.to].push_back({at, {round, t.from, t.to, t.segment}});
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (st.folded_next_round) std::swap(arrivals[k], owed_[k]);  // wait for the last round's
    const double start = clock_[k], deadline = start + o_.deadline_s;
    double end = start;
    for (const Arrival& a : arrivals[k]) {
      if (a.at > deadline) {
        ++r.skipped;
        r.lost.push_back(a.message);
      }
      end = std::max(end, std::min(a.at, deadline));
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
  bool ring = true;       // the ring schedule (each member sends to the next)
  // The other schedules' steps, in order: each member exchanges `bytes`
  // with the member `distance` from it (its rank ^ distance).
  std::vector<TimeModel::PairedStep> paired;
};

AllreduceCost allreduce_cost(uint64_t bytes, size_t n, const protocol::CodecSpec& codec) {
  const double p = static_cast<double>(n);
  if (!codec.lossless()) {  // CompressedAllreduce: always the ring, each block in the codec
    const double b = static_cast<double>(protocol::encoded_bytes(codec, bytes / sizeof(float)));
    return {2 * (p - 1), 2 * (p - 1) / p * b, true, {}};
  }
  const double b = static_cast<double>(bytes);
  const double log_p = std::log2(p);
  AllreduceCost c{0, 0, false, {}};
  switch (protocol::allreduce_schedule(bytes / sizeof(float), n)) {
    case protocol::AllreduceSchedule::kDoubling:  // the whole buffer at distance 1, 2, 4, ...
      for (size_t d = 1; d < n; d *= 2) c.paired.push_back({d, b});
      c.steps = log_p;
      c.bytes_each = log_p * b;
      return c;
    case protocol::AllreduceSchedule::kButterfly:  // halving at n/2 ... 1, doubling at 1 ... n/2
      for (size_t d = n / 2; d >= 1; d /= 2) c.paired.push_back({d, b * static_cast<double>(d) / p});
      for (size_t d = 1; d < n; d *= 2) c.paired.push_back({d, b * static_cast<double>(d) / p});
      c.steps = 2 * log_p;
      c.bytes_each = 2 * (p - 1) / p * b;
      return c;
    case protocol::AllreduceSchedule::kRing:
      break;
  }
  return {2 * (p - 1), 2 * (p - 1) / p * b, true, {}};
}

}  // namespace

TimeModel::AllreducePath TimeModel::wan_allreduce_path(const std::vector<uint32_t>& group, bool ring) const {
  AllreducePath p;
  p.ring = ring;
  const auto add = [&](uint32_t from, uint32_t to) {
    const Route way = route(from, to);
    p.sides.insert(p.sides.end(), {way.up, way.down});
    if (way.via != kNoSide) p.sides.push_back(way.via);
    p.latency_s = std::max(p.latency_s, way.latency_s);
    p.hops.push_back({way.latency_s, way.loss});
    const double slowest =
        std::min({rate(way.up), receive_rate(way.down), way.via != kNoSide ? rate(way.via) : rate(way.up)});
    p.s_per_byte = std::max(p.s_per_byte, 1 / slowest);
  };
  for (size_t k = 0; k < group.size(); ++k) {
    if (ring) {
      add(group[k], group[(k + 1) % group.size()]);
      continue;
    }
    for (uint32_t to : group) {
      if (to != group[k]) add(group[k], to);
    }
  }
  return p;
}

double TimeModel::wan_ring_step_s(const AllreducePath& p, double step_bytes) {
  const auto bytes = static_cast<uint64_t>(step_bytes);
  double sum = 0;
  for (const auto& hop : p.hops) sum += hop.delay_s * (1 + 2 * message_loss(bytes, hop.loss));
  return sum / static_cast<double>(p.hops.size());
}

double TimeModel::wan_paired_s(const std::vector<uint32_t>& group,
                               const std::vector<PairedStep>& steps) const {
  const size_t n = group.size();
  double total = 0;
  for (const PairedStep& st : steps) {
    double delay = 0, loss = 0;
    for (size_t k = 0; k < n; ++k) {
      const Route way = route(group[k], group[k ^ st.distance]);
      delay = std::max(delay, way.latency_s);
      loss = std::max(loss, way.loss);
    }
    const auto bytes = static_cast<uint64_t>(st.bytes);
    const double any = 1 - std::pow(1 - message_loss(bytes, loss), static_cast<double>(n));
    total += delay * (1 + 2 * any);
  }
  return total;
}

TimeModel::AllreducePath TimeModel::allreduce_path(const std::vector<uint32_t>& group, bool ring) const {
  if (!o_.wan.empty()) return wan_allreduce_path(group, ring);
  AllreducePath p;
  const size_t hosts = o_.links.size();
  std::vector<double> across(hosts, 0);  // per host: its members sending across at once
  bool in_host = false, spans = false;
  for (uint32_t i : group) spans = spans || o_.host[i] != o_.host[group.front()];
  for (size_t k = 0; k < group.size(); ++k) {
    const uint32_t i = group[k], next = group[(k + 1) % group.size()];
    const uint32_t h = o_.host[i];
    p.sides.push_back(hosts + i);
    if (ring ? o_.host[next] != h : spans) {
      across[h] += 1;
    } else {
      in_host = true;
    }
  }
  if (in_host) {
    p.latency_s = o_.host_link.latency_s;
    p.s_per_byte = 1 / o_.host_link.bytes_per_s;
  }
  for (size_t h = 0; h < hosts; ++h) {
    if (across[h] == 0) continue;
    p.sides.push_back(h);
    p.latency_s = std::max(p.latency_s, o_.links[h].latency_s);
    p.s_per_byte = std::max(p.s_per_byte, across[h] / o_.links[h].bytes_per_s);
  }
  return p;
}

void TimeModel::allreduces(const TrafficStage& st, ModelledRound& r) {
  for (const auto& group : st.groups) {
    const size_t n = group.size();
    if (n < 2) continue;
    const AllreduceCost c = allreduce_cost(st.allreduce_bytes, n, st.allreduce_codec);
    const AllreducePath path = allreduce_path(group, c.ring);
    double start = 0;
    for (uint32_t i : group) start = std::max(start, clock_[i]);
    for (size_t side : path.sides) start = std::max({start, up_[side].free, down_[side].free});
    double latency_s = c.steps * path.latency_s;
    if (!o_.wan.empty()) {
      latency_s =
          c.ring ? c.steps * wan_ring_step_s(path, c.bytes_each / c.steps) : wan_paired_s(group, c.paired);
    }
    const double end = start + latency_s + c.bytes_each * path.s_per_byte;
    for (uint32_t i : group) {
      waited_[i] += end - clock_[i];
      clock_[i] = end;
    }
    for (size_t side : path.sides) up_[side].free = down_[side].free = end;
    r.bytes_sent += static_cast<uint64_t>(c.bytes_each) * n;
  }
}

}  // namespace gossipd::daemon
