#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/bench/collective_bench.h"
#include "protocol/collectives/group.h"

namespace gossipd::daemon {

// Rank `rank`'s bench input at element i: integer-valued, so any summation
// order gives the same float.
float bench_input(size_t rank, size_t i);
std::vector<float> inputs_of(size_t rank, size_t count);
// The sum of every rank's inputs, element by element in rank order.
std::vector<float> serial_sum(size_t procs, size_t count);

// One bench's work on one rank (collective_ops.cc): reset() before each
// repetition and check() after it are not timed, run() is.
class BenchOp {
 public:
  virtual ~BenchOp() = default;
  virtual void reset() = 0;
  virtual void run() = 0;
  // The result is bit-identical to the serial one.
  virtual bool check() const = 0;
  // How much of run()'s time counts: pingpong's rank 0 reports half its
  // round trip, rank 1 nothing (the slowest rank is then rank 0).
  virtual double time_factor() const { return 1.0; }
};

// The op named `op` on `floats` elements per rank, by o.schedule (pingpong:
// pieces of o.chunk_bytes); throws for an unknown name.
std::unique_ptr<BenchOp> make_bench_op(const std::string& op, protocol::Group& group, size_t floats,
                                       const CollectiveBenchOptions& o);

// A bench rank's node id: "r<rank>".
std::string rank_id(size_t rank);

// The Node a bench rank runs: id "r<rank>", cluster "bench", o.path, CURVE
// with the key in o.curve_key when set, every rank of o.procs a member from
// the start.
protocol::NodeOptions bench_node_options(size_t rank, const std::string& listen,
                                         const CollectiveBenchOptions& o);

// Makes every other rank of `endpoints` a peer of `node` (rank r's id is
// rank_id(r)); returns the ids of all ranks in rank order.
std::vector<std::string> add_bench_peers(protocol::Node& node, size_t rank,
                                         const std::vector<std::string>& endpoints);

// Builds the group of every rank on `node` and times the op (warm-up
// repetitions first), a barrier before each repetition.
WorkerReport run_collective_rank(protocol::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                                 const CollectiveBenchOptions& o);

}  // namespace gossipd::daemon
