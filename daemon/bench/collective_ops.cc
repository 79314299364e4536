#include "daemon/bench/collective_ops.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <span>
#include <sstream>
#include <stdexcept>

#include "protocol/collectives/barrier.h"
#include "protocol/collectives/butterfly.h"
#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/collectives.h"
#include "protocol/collectives/doubling.h"
#include "protocol/collectives/ring.h"

namespace gossipd::daemon {

float bench_input(size_t rank, size_t i) { return static_cast<float>((i * 7 + rank * 13) % 101); }

std::vector<float> inputs_of(size_t rank, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = bench_input(rank, i);
  return v;
}

std::vector<float> serial_sum(size_t procs, size_t count) {
  std::vector<float> v(count, 0.0f);
  for (size_t r = 0; r < procs; ++r) {
    for (size_t i = 0; i < count; ++i) v[i] += bench_input(r, i);
  }
  return v;
}

namespace {

using Clock = std::chrono::steady_clock;
namespace gp = gossipd::protocol;

bool same(const float* a, const float* b, size_t count) {
  return std::memcmp(a, b, count * sizeof(float)) == 0;
}

// One collective call on the whole buffer, by the schedule asked for.
using Collective = std::function<void(gp::Group&, std::span<float>)>;

// Allreduce and reduce-scatter: every rank sums its inputs in place; a
// reduce-scatter's rank checks only its own block.
class ReduceOp : public BenchOp {
 public:
  ReduceOp(gp::Group& group, size_t count, bool own_block_only, Collective collective)
      : group_(group),
        input_(inputs_of(group.rank(), count)),
        expected_(serial_sum(group.size(), count)),
        data_(count),
        checked_(own_block_only ? gp::block_range(count, group.size(), group.rank())
                                : gp::BlockRange{0, count}),
        collective_(std::move(collective)) {}
  void reset() override { std::copy(input_.begin(), input_.end(), data_.begin()); }
  void run() override { collective_(group_, data_); }
  bool check() const override {
    return same(data_.data() + checked_.begin, expected_.data() + checked_.begin, checked_.size());
  }

 private:
  gp::Group& group_;
  std::vector<float> input_, expected_, data_;
  gp::BlockRange checked_;
  Collective collective_;
};

// Each rank contributes its block; all blocks are poisoned before a
// repetition, so a block that never arrived fails the check.
class AllgatherOp : public BenchOp {
 public:
  AllgatherOp(gp::Group& group, size_t count, Collective collective)
      : group_(group), expected_(count), data_(count), collective_(std::move(collective)) {
    for (size_t r = 0; r < group.size(); ++r) {
      const gp::BlockRange b = gp::block_range(count, group.size(), r);
      for (size_t i = b.begin; i < b.end; ++i) expected_[i] = bench_input(r, i);
    }
    own_ = gp::block_range(count, group.size(), group.rank());
  }
  void reset() override {
    std::fill(data_.begin(), data_.end(), -1.0f);
    std::copy(expected_.begin() + own_.begin, expected_.begin() + own_.end, data_.begin() + own_.begin);
  }
  void run() override { collective_(group_, data_); }
  bool check() const override { return same(data_.data(), expected_.data(), data_.size()); }

 private:
  gp::Group& group_;
  std::vector<float> expected_, data_;
  gp::BlockRange own_;
  Collective collective_;
};

// The schedules of `op` by name (auto: what the modes call).
Collective collective_of(const std::string& op, const std::string& schedule) {
  using B = gp::Butterfly;
  const bool ring = schedule == "ring", butterfly = schedule == "butterfly";
  if (op == "allreduce") {
    if (ring) return [](gp::Group& g, std::span<float> d) { gp::AllreduceRing(g, d).run(); };
    if (butterfly) return [](gp::Group& g, std::span<float> d) { gp::AllreduceButterfly(g, d).run(); };
    if (schedule == "doubling")
      return [](gp::Group& g, std::span<float> d) { gp::AllreduceDoubling(g, d).run(); };
    return [](gp::Group& g, std::span<float> d) { gp::Allreduce(g, d).run(); };
  }
  if (op == "reduce-scatter") {
    if (ring) return [](gp::Group& g, std::span<float> d) { gp::ReduceScatterRing(g, d).run(); };
    if (butterfly) return [](gp::Group& g, std::span<float> d) { B(g, d, B::Kind::kReduceScatter).run(); };
    return [](gp::Group& g, std::span<float> d) { gp::ReduceScatter(g, d).run(); };
  }
  if (ring) return [](gp::Group& g, std::span<float> d) { gp::AllgatherRing(g, d).run(); };
  if (butterfly) return [](gp::Group& g, std::span<float> d) { B(g, d, B::Kind::kAllgather).run(); };
  return [](gp::Group& g, std::span<float> d) { gp::Allgather(g, d).run(); };
}

// Rank 0 sends its buffer to rank 1 in pieces of chunk_bytes (one channel
// per repetition, step 0); rank 1 takes every piece into its buffer, then
// sends the buffer back (step 1) into rank 0's receive buffer.
class PingpongOp : public BenchOp {
 public:
  PingpongOp(gp::Group& group, size_t count, size_t chunk_bytes)
      : group_(group), message_(inputs_of(0, count)), buffer_(count) {
    if (group.size() != 2) throw std::invalid_argument("pingpong needs exactly 2 processes");
    const size_t chunk = std::max<size_t>(1, chunk_bytes / sizeof(float));
    pieces_ = std::max<size_t>(1, (count + chunk - 1) / chunk);
  }
  void reset() override { std::fill(buffer_.begin(), buffer_.end(), -1.0f); }
  void run() override;
  bool check() const override { return same(buffer_.data(), message_.data(), buffer_.size()); }
  double time_factor() const override { return group_.rank() == 0 ? 0.5 : 0.0; }

 private:
  void send_all(gp::CollectiveChannel& ch, gp::SendTracker& tracker, const std::vector<float>& from,
                uint32_t step);
  void recv_all(gp::CollectiveChannel& ch, uint32_t step);

  gp::Group& group_;
  std::vector<float> message_;  // what rank 0 sends
  std::vector<float> buffer_;   // where each rank receives
  size_t pieces_ = 1;
};

void PingpongOp::run() {
  gp::CollectiveChannel ch(group_, "pingpong");
  gp::SendTracker tracker(1);
  const size_t peer = 1 - group_.rank();
  try {
    if (group_.rank() == 0) {
      send_all(ch, tracker, message_, 0);
      recv_all(ch, 1);
    } else {
      recv_all(ch, 0);
      send_all(ch, tracker, buffer_, 1);
    }
    ch.wait_sent(tracker, peer);
  } catch (...) {
    ch.release_sends(tracker, {peer});
    throw;
  }
}

void PingpongOp::send_all(gp::CollectiveChannel& ch, gp::SendTracker& tracker, const std::vector<float>& from,
                          uint32_t step) {
  const std::span<const float> all(from);
  for (size_t j = 0; j < pieces_; ++j) {
    const gp::BlockRange p = gp::block_range(all.size(), pieces_, j);
    ch.send(1 - group_.rank(), step, static_cast<uint32_t>(j), all.subspan(p.begin, p.size()),
            tracker.token(0));
  }
}

// Every piece is posted first (MPI's irecv): one that overtakes the piece
// being waited for lands in place too.
void PingpongOp::recv_all(gp::CollectiveChannel& ch, uint32_t step) {
  const auto piece = [&](size_t j) {
    const gp::BlockRange p = gp::block_range(buffer_.size(), pieces_, j);
    return std::span<float>(buffer_).subspan(p.begin, p.size());
  };
  constexpr auto kCopy = gp::CollectiveChannel::Fold::kCopy;
  for (size_t j = 0; j < pieces_; ++j)
    ch.expect(1 - group_.rank(), step, static_cast<uint32_t>(j), piece(j), kCopy);
  for (size_t j = 0; j < pieces_; ++j)
    ch.recv_into(1 - group_.rank(), step, static_cast<uint32_t>(j), piece(j), kCopy);
}

WorkerReport time_op(gp::Group& group, BenchOp& op, const CollectiveBenchOptions& o) {
  WorkerReport report;
  report.exact = true;
  for (int rep = 0; rep < o.warmup + o.reps; ++rep) {
    op.reset();
    gp::Barrier(group).run();  // start together: time the collective, not the skew
    const auto t0 = Clock::now();
    op.run();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (rep >= o.warmup) report.rep_seconds.push_back(seconds * op.time_factor());
    report.exact = report.exact && op.check();
  }
  gp::Barrier(group).run();  // nobody closes while a peer still reads from it
  return report;
}

}  // namespace

std::string rank_id(size_t rank) {
  std::ostringstream s;
  s << 'r' << rank;
  return s.str();
}

std::unique_ptr<BenchOp> make_bench_op(const std::string& op, gp::Group& group, size_t floats,
                                       const CollectiveBenchOptions& o) {
  if (o.schedule != "auto" && o.schedule != "ring" && o.schedule != "butterfly" &&
      !(o.schedule == "doubling" && op == "allreduce"))
    throw std::invalid_argument("bench: schedule " + o.schedule + " is not one of " + op + "'s");
  if (op == "allreduce" || op == "reduce-scatter")
    return std::make_unique<ReduceOp>(group, floats, op == "reduce-scatter", collective_of(op, o.schedule));
  if (op == "allgather") return std::make_unique<AllgatherOp>(group, floats, collective_of(op, o.schedule));
  if (op == "pingpong") return std::make_unique<PingpongOp>(group, floats, o.chunk_bytes);
  throw std::invalid_argument("bench: unknown op " + op);
}

gp::NodeOptions bench_node_options(size_t rank, const std::string& listen, const CollectiveBenchOptions& o) {
  gp::NodeOptions n;
  n.id = rank_id(rank);
  n.listen = listen;
  n.validation.cluster_id = "bench";
  // A peer that got the endpoints first may send (its first barrier) before
  // this rank's add_peer: accept every rank from the start.
  for (int r = 0; r < o.procs; ++r) n.initial_members.push_back(rank_id(static_cast<size_t>(r)));
  n.data_path = o.path == "zmq" ? gp::DataPath::kZmq : gp::DataPath::kTcp;
  if (o.path != "shm") n.shared_memory_bytes = 0;
  if (o.path == "shm" && o.shm_bytes > 0) n.shared_memory_bytes = o.shm_bytes;
  n.data_socket.congestion = o.congestion == "system" ? "" : o.congestion;
  if (!o.curve_key.empty()) {  // one cluster key: serve with it, present it, admit only it
    const gp::KeyPair key = gp::read_secret_key_file(o.curve_key);
    n.curve = gp::CurveOptions{key, key.public_key, {key.public_key}};
  }
  return n;
}

std::vector<std::string> add_bench_peers(gp::Node& node, size_t rank,
                                         const std::vector<std::string>& endpoints) {
  std::vector<std::string> ids;
  for (size_t r = 0; r < endpoints.size(); ++r) {
    ids.push_back(rank_id(r));
    if (r != rank) node.add_peer(ids.back(), endpoints[r]);
  }
  return ids;
}

WorkerReport run_collective_rank(gp::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                                 const CollectiveBenchOptions& o) {
  const std::vector<std::string> ids = add_bench_peers(node, rank, endpoints);
  gp::CollectiveOptions co;
  co.timeout = std::chrono::milliseconds(o.timeout_ms);
  co.chunk_bytes = o.chunk_bytes;
  co.spin = std::chrono::microseconds(o.spin_us);
  gp::Group group(node, 0, ids, co);
  const auto op = make_bench_op(o.op, group, bench_floats(o), o);
  return time_op(group, *op, o);
}

size_t bench_floats(const CollectiveBenchOptions& o) {
  const size_t floats = o.bytes / sizeof(float);
  if (o.op != "allgather" && o.op != "reduce-scatter") return floats;
  const size_t procs = static_cast<size_t>(std::max(1, o.procs));
  return std::max(procs, floats / procs * procs);
}

WorkerReport bench_collective_rank(int rank, const std::vector<std::string>& endpoints,
                                   const CollectiveBenchOptions& options) {
  if (rank < 0 || static_cast<size_t>(rank) >= endpoints.size())
    throw std::invalid_argument("bench: bad rank");
  CollectiveBenchOptions o = options;
  o.procs = static_cast<int>(endpoints.size());
  const auto r = static_cast<size_t>(rank);
  gp::Node node(bench_node_options(r, endpoints[r], o));
  return run_collective_rank(node, r, endpoints, o);
}

}  // namespace gossipd::daemon
