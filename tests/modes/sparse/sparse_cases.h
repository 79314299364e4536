#pragma once

// The cases the row-parallel sparse tests (inference and training) run:
// every partitioner at P = 2, 3 and 4, named like "hypergraph3".
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "daemon/modes/sparse/sparse_partition.h"
#include "protocol/wire/tags.h"

namespace gossipd::testing {

// The modes' block: the tests' nodes run the sparse rows alone (a run
// takes the registry's range, Mode::tags).
inline const protocol::tags::Range kSparseTags = protocol::tags::range(protocol::tags::User::kModes);

using daemon::NeuronPartitioner;
using daemon::partitioner_names;

struct PartitionCase {
  uint32_t procs;
  NeuronPartitioner how;
};

inline auto every_partition_case() {
  return ::testing::Values(
      PartitionCase{2, NeuronPartitioner::kBlock}, PartitionCase{3, NeuronPartitioner::kBlock},
      PartitionCase{4, NeuronPartitioner::kBlock}, PartitionCase{2, NeuronPartitioner::kRandom},
      PartitionCase{3, NeuronPartitioner::kRandom}, PartitionCase{4, NeuronPartitioner::kRandom},
      PartitionCase{2, NeuronPartitioner::kHypergraph}, PartitionCase{3, NeuronPartitioner::kHypergraph},
      PartitionCase{4, NeuronPartitioner::kHypergraph});
}

inline std::string partition_case_name(const ::testing::TestParamInfo<PartitionCase>& info) {
  return partitioner_names()[static_cast<size_t>(info.param.how)] + std::to_string(info.param.procs);
}

}  // namespace gossipd::testing
