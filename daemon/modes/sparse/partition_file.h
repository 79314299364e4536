#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "daemon/modes/sparse/net/sparse_net.h"
#include "daemon/modes/sparse/sparse_partition.h"

namespace gossipd::daemon {

// A neuron partition on disk, for the network it was made for:
//   gossipd-sparse-partition 1 neurons N layers L procs P network FINGERPRINT
//   then L + 1 lines (the inputs, then layer 1..L), each N owners 0..P-1
// FINGERPRINT: of the network's edges (not its weights), so a partition is
// refused for another network, another width or depth, or a renumbering.
uint64_t network_fingerprint(const trainer::sparse::SparseNet& net);

std::string partition_text(const trainer::sparse::SparseNet& net, const NeuronOwners& owners, uint32_t procs);
void write_partition_file(const std::filesystem::path& file, const trainer::sparse::SparseNet& net,
                          const NeuronOwners& owners, uint32_t procs);

// The owners, checked against `net`: a DataError "NAME[:LINE]: reason" for
// a malformed or truncated file or one made for another network.
NeuronOwners parse_partition(const std::string& name, const std::string& text,
                             const trainer::sparse::SparseNet& net, uint32_t& procs);
NeuronOwners read_partition_file(const std::filesystem::path& file, const trainer::sparse::SparseNet& net,
                                 uint32_t& procs);

}  // namespace gossipd::daemon
