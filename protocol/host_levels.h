#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/group.h"

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

// Allreduce in two levels over a group whose members share hosts: a
// reduce-scatter among the members of each host (over shared memory where
// they map it), an allreduce of each block across the hosts among the
// members holding it (one per host: the network carries 2(H-1)/H of the
// buffer per host instead of a flat ring's 2(P-1)/P; the butterfly or the
// ring, never recursive doubling), then an allgather in each host. Every member of the group runs it with the
// same layout; the result is the sum, the same on every member (summed in another order than a flat ring:
// equal to it for integer-valued inputs). Its groups take tags from tags::User::kHostLevels keyed by the
// group's tag, or by `levels_key` where one member sums over groups whose
// tags agree in their low 16 bits (the grid's).
class TwoLevelAllreduce {
 public:
  // Throws ProtocolConfigError when two_levels_apply(layout) does not hold
  // or the layout does not cover the group's ranks.
  TwoLevelAllreduce(Group& group, const HostLayout& layout);
  TwoLevelAllreduce(Group& group, const HostLayout& layout, uint32_t levels_key);
  ~TwoLevelAllreduce();
  TwoLevelAllreduce(const TwoLevelAllreduce&) = delete;
  TwoLevelAllreduce& operator=(const TwoLevelAllreduce&) = delete;

  // Sum over the group, in place.
  void run(std::span<float> data);

  const Group& in_host() const { return *in_host_; }
  const Group& across_hosts() const { return *across_; }

 private:
  std::unique_ptr<Group> in_host_;  // this member's host
  std::unique_ptr<Group> across_;   // the members at this member's place in every host
};

// A group's allreduce as its members' hosts allow: in two levels where they
// share hosts evenly (two_levels_apply on agreed_host_layout: measured faster
// than one flat ring at every size over mixed links, tests/bench/README.md),
// else the flat schedules (Allreduce). The layout is agreed at the first
// sum, a collective: every member makes its first sum at the same point.
class HostAwareAllreduce {
 public:
  // `levels_key` as TwoLevelAllreduce's (the group's tag when none).
  explicit HostAwareAllreduce(Group& group, std::optional<uint32_t> levels_key = std::nullopt);
  ~HostAwareAllreduce();
  HostAwareAllreduce(const HostAwareAllreduce&) = delete;
  HostAwareAllreduce& operator=(const HostAwareAllreduce&) = delete;

  // Sum over the group, in place. The first call lays the levels out.
  void run(std::span<float> data);
  // After the first sum: the hosts and members per host of the two levels
  // ("2 hosts of 4 members"), or empty for one flat ring.
  const std::string& levels() const { return levels_text_; }

 private:
  Group& group_;
  std::optional<uint32_t> key_;
  bool laid_out_ = false;
  std::unique_ptr<TwoLevelAllreduce> levels_;
  std::string levels_text_;
};

}  // namespace gossipd::protocol
