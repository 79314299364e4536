#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// Where the members of a group run, host by host: the two-level allreduce's
// map (MPI's and NCCL's hierarchical form: inside each host, then across).
struct HostLayout {
  // Each host's ranks in ascending order; hosts in the order of their lowest rank.
  std::vector<std::vector<size_t>> hosts;
  // The members each host holds when every host holds the same number, else 0.
  size_t per_host = 0;
};

// Groups ranks by `host_of_rank` (a host's name, e.g. the address of the
// member's endpoint; equal names are one host).
HostLayout host_layout(std::span<const std::string> host_of_rank);

// The host of each member of `group`, from the addresses of the members'
// endpoints: every loopback address is one host (as Node::shares_memory_with
// has it); a member whose endpoint names no address (ipc://) is on this
// node's host.
std::vector<std::string> member_hosts(const Group& group);

// The layout of rank 0 (member_hosts there), broadcast to every member:
// the same on all of them even where one names hosts otherwise (its own
// endpoint as bound, the others' as advertised). A collective over `group`:
// every member calls it at the same point.
HostLayout agreed_host_layout(Group& group);

// Whether the two-level form applies: two hosts or more, each holding the
// same number of members, two or more (and at most 128 of either, the
// room its tags have).
bool two_levels_apply(const HostLayout& layout);

// Collectives in two levels over a group whose members share hosts (MPI's
// and NCCL's hierarchical form). The allreduce: a reduce-scatter among the
// members of each host (over shared memory where they map it), an allreduce
// of each block across the hosts among the members holding it (one per
// host: the network carries 2(H-1)/H of the buffer per host instead of a
// flat ring's 2(P-1)/P; the butterfly or the ring, never recursive
// doubling), then an allgather in each host. The reduce-scatter and
// allgather of a sharded update (rank r's block: counts[r] floats after
// block r - 1, or block_range) the same way, through a staging buffer
// that orders the blocks by place in the host, then by host: in the host,
// then across; across, then in the host. Every member of the group runs
// them with the same layout; the sums are the flat ones in another order
// (equal for integer-valued inputs). Its groups take tags from
// tags::User::kHostLevels keyed by the group's tag, or by `levels_key`
// where one member sums over groups whose tags agree in their low 16 bits
// (the grid's).
class TwoLevelCollectives {
 public:
  // Throws ProtocolConfigError when two_levels_apply(layout) does not hold
  // or the layout does not cover the group's ranks.
  TwoLevelCollectives(Group& group, const HostLayout& layout);
  TwoLevelCollectives(Group& group, const HostLayout& layout, uint32_t levels_key);
  ~TwoLevelCollectives();
  TwoLevelCollectives(const TwoLevelCollectives&) = delete;
  TwoLevelCollectives& operator=(const TwoLevelCollectives&) = delete;

  // Sum over the group, in place.
  void run(std::span<float> data);
  // Afterwards this rank's block holds its sum over the group (the others
  // are left as they were); ProtocolConfigError for counts that do not
  // fit the group and the buffer, as the flat ones.
  void reduce_scatter(std::span<float> data, std::span<const size_t> counts = {});
  // Every rank's block to every rank.
  void allgather(std::span<float> data, std::span<const size_t> counts = {});

  const Group& in_host() const { return *in_host_; }
  const Group& across_hosts() const { return *across_; }

 private:
  struct Staging;
  Staging staging(size_t count, std::span<const size_t> counts) const;

  size_t rank_ = 0, place_ = 0;
  std::vector<std::vector<size_t>> hosts_;  // the layout's
  std::unique_ptr<Group> in_host_;          // this member's host
  std::unique_ptr<Group> across_;           // the members at this member's place in every host
  std::vector<float> stage_;                // the sharded collectives' staging buffer
};

// A group's collectives as its members' hosts allow: in two levels where
// they share hosts evenly (two_levels_apply on agreed_host_layout: the
// allreduce measured faster than one flat ring at every size over mixed
// links, tests/bench/README.md), else the flat schedules. The layout is
// agreed at the first call, a collective: every member makes its first
// call at the same point.
class HostAwareCollectives {
 public:
  // Called once, when the first call lays out two levels, with levels():
  // the mode says so in its own words (nothing is called for flat).
  using OnLevels = std::function<void(const std::string& levels)>;

  // `levels_key` as TwoLevelCollectives' (the group's tag when none).
  explicit HostAwareCollectives(Group& group, std::optional<uint32_t> levels_key = std::nullopt,
                                OnLevels on_levels = {});
  ~HostAwareCollectives();
  HostAwareCollectives(const HostAwareCollectives&) = delete;
  HostAwareCollectives& operator=(const HostAwareCollectives&) = delete;

  // As Allreduce, ReduceScatter and Allgather (collectives.h).
  void allreduce(std::span<float> data);
  void reduce_scatter(std::span<float> data, std::span<const size_t> counts = {});
  void allgather(std::span<float> data, std::span<const size_t> counts = {});
  // After the first call: the hosts and members per host of the two levels
  // ("2 hosts of 4 members"), or empty for the flat schedules.
  const std::string& levels() const { return levels_text_; }

 private:
  TwoLevelCollectives* laid_out();  // the levels, or null for flat

  Group& group_;
  std::optional<uint32_t> key_;
  OnLevels on_levels_;
  bool laid_out_ = false;
  std::unique_ptr<TwoLevelCollectives> levels_;
  std::string levels_text_;
};

}  // namespace gossipd::protocol
