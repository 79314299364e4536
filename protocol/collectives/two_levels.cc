#include "protocol/collectives/two_levels.h"

#include <algorithm>
#include <map>

#include "protocol/collectives/broadcast_ring.h"
#include "protocol/collectives/butterfly.h"
#include "protocol/collectives/collectives.h"
#include "protocol/transport/data_socket.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::protocol {
namespace {

constexpr size_t kMaxLevelGroups = 128;  // hosts, and members per host: half the 256 tags each

std::string host_or(const std::string& endpoint, const std::string& own_host) {
  const std::string host = host_key(endpoint);
  return host.empty() ? own_host : host;
}

uint32_t level_tag(uint32_t parent_tag, size_t index) {
  return tags::range(tags::User::kHostLevels).at((uint64_t{parent_tag} << 8) | index);
}

std::vector<std::string> ids_of(const Group& group, const std::vector<size_t>& ranks) {
  std::vector<std::string> ids;
  for (size_t r : ranks) ids.push_back(group.member(r));
  return ids;
}

}  // namespace

HostLayout host_layout(std::span<const std::string> host_of_rank) {
  HostLayout layout;
  std::map<std::string, size_t> index;
  for (size_t r = 0; r < host_of_rank.size(); ++r) {
    const auto [it, added] = index.try_emplace(host_of_rank[r], layout.hosts.size());
    if (added) layout.hosts.emplace_back();
    layout.hosts[it->second].push_back(r);
  }
  if (!layout.hosts.empty()) {
    const size_t n = layout.hosts.front().size();
    const bool even = std::all_of(layout.hosts.begin(), layout.hosts.end(),
                                  [n](const std::vector<size_t>& h) { return h.size() == n; });
    layout.per_host = even ? n : 0;
  }
  return layout;
}

std::vector<std::string> member_hosts(const Group& group) {
  const Node& node = group.node();
  const std::string own = host_or(node.endpoint(), "this host");
  std::vector<std::string> hosts;
  for (const std::string& m : group.members())
    hosts.push_back(m == node.id() ? own : host_or(node.peer_endpoint(m), own));
  return hosts;
}

HostLayout agreed_host_layout(Group& group) {
  std::vector<float> host_index(group.size(), 0.0f);  // exact below 2^24
  if (group.rank() == 0) {
    const HostLayout mine = host_layout(member_hosts(group));
    for (size_t h = 0; h < mine.hosts.size(); ++h) {
      for (size_t r : mine.hosts[h]) host_index[r] = static_cast<float>(h);
    }
  }
  BroadcastRing(group, host_index, 0).run();
  std::vector<std::string> names;
  for (float h : host_index) names.push_back(std::to_string(static_cast<size_t>(h)));
  return host_layout(names);
}

bool two_levels_apply(const HostLayout& layout) {
  return layout.hosts.size() >= 2 && layout.hosts.size() <= kMaxLevelGroups && layout.per_host >= 2 &&
         layout.per_host <= kMaxLevelGroups;
}

TwoLevelCollectives::TwoLevelCollectives(Group& group, const HostLayout& layout)
    : TwoLevelCollectives(group, layout, group.tag()) {}

TwoLevelCollectives::TwoLevelCollectives(Group& group, const HostLayout& layout, uint32_t levels_key) {
  if (!two_levels_apply(layout))
    throw ProtocolConfigError(
        "two-level allreduce: needs 2 to 128 hosts holding the same number of members, 2 to 128");
  size_t covered = 0;
  for (size_t h = 0; h < layout.hosts.size(); ++h) {
    covered += layout.hosts[h].size();
    const auto& ranks = layout.hosts[h];
    const auto me = std::find(ranks.begin(), ranks.end(), group.rank());
    if (me == ranks.end()) continue;
    const size_t place = static_cast<size_t>(me - ranks.begin());
    rank_ = group.rank();
    place_ = place;
    std::vector<size_t> peers;  // the member at `place` on every host
    for (const auto& other : layout.hosts) peers.push_back(other.at(place));
    in_host_ = std::make_unique<Group>(group.node(), level_tag(levels_key, h), ids_of(group, ranks),
                                       group.options());
    across_ = std::make_unique<Group>(group.node(), level_tag(levels_key, kMaxLevelGroups + place),
                                      ids_of(group, peers), group.options());
  }
  if (covered != group.size() || !in_host_)
    throw ProtocolConfigError("two-level allreduce: the layout does not cover the group's " +
                              std::to_string(group.size()) + " ranks");
  hosts_ = layout.hosts;
}

TwoLevelCollectives::~TwoLevelCollectives() = default;

void TwoLevelCollectives::run(std::span<float> data) {
  ReduceScatter(*in_host_, data).run();
  const BlockRange mine = block_range(data.size(), in_host_->size(), in_host_->rank());
  // Across hosts never recursive doubling: it sends the whole block log2(H)
  // times, which pays on loopback (where its threshold was measured) but not
  // on a network link: 32 KB over 4 hosts of 100 mbit took 5.5 ms with it,
  // 4.1 ms with the butterfly (gossipctl bench two-level, tests/bench/README.md).
  const auto block = data.subspan(mine.begin, mine.end - mine.begin);
  if (allreduce_schedule(block.size(), across_->size()) == AllreduceSchedule::kDoubling)
    AllreduceButterfly(*across_, block).run();
  else
    Allreduce(*across_, block).run();
  Allgather(*in_host_, data).run();
}

// Where each rank's block lies in the buffer and in the staging order
// (by place in the host, then by host), and the block counts of this
// member's two groups.
struct TwoLevelCollectives::Staging {
  std::vector<BlockRange> flat;  // by rank, in the buffer
  std::vector<size_t> staged;    // by rank: where its block starts in stage_
  std::vector<size_t> in_host;   // by place: the floats of that place's blocks on every host
  std::vector<size_t> across;    // by host: the block of the member at this place
  size_t segment = 0;            // where this place's blocks start in stage_
};

TwoLevelCollectives::Staging TwoLevelCollectives::staging(size_t count,
                                                          std::span<const size_t> counts) const {
  Staging s;
  const size_t ranks = hosts_.size() * hosts_.front().size();
  s.flat = block_layout(count, ranks, counts, "two-level collective");
  s.staged.assign(ranks, 0);
  size_t at = 0;
  for (size_t p = 0; p < hosts_.front().size(); ++p) {
    if (p == place_) s.segment = at;
    const size_t begin = at;
    for (const auto& host : hosts_) {
      const BlockRange& b = s.flat[host[p]];
      s.staged[host[p]] = at;
      at += b.end - b.begin;
      if (p == place_) s.across.push_back(b.end - b.begin);
    }
    s.in_host.push_back(at - begin);
  }
  return s;
}

void TwoLevelCollectives::reduce_scatter(std::span<float> data, std::span<const size_t> counts) {
  const Staging s = staging(data.size(), counts);
  stage_.resize(data.size());
  for (size_t r = 0; r < s.flat.size(); ++r)
    std::copy(data.begin() + s.flat[r].begin, data.begin() + s.flat[r].end, stage_.begin() + s.staged[r]);
  ReduceScatter(*in_host_, stage_, s.in_host).run();
  ReduceScatter(*across_, std::span<float>(stage_).subspan(s.segment, s.in_host[place_]), s.across).run();
  const BlockRange mine = s.flat[rank_];
  std::copy_n(stage_.begin() + s.staged[rank_], mine.end - mine.begin, data.begin() + mine.begin);
}

void TwoLevelCollectives::allgather(std::span<float> data, std::span<const size_t> counts) {
  const Staging s = staging(data.size(), counts);
  stage_.resize(data.size());
  const BlockRange mine = s.flat[rank_];
  std::copy(data.begin() + mine.begin, data.begin() + mine.end, stage_.begin() + s.staged[rank_]);
  Allgather(*across_, std::span<float>(stage_).subspan(s.segment, s.in_host[place_]), s.across).run();
  Allgather(*in_host_, stage_, s.in_host).run();
  for (size_t r = 0; r < s.flat.size(); ++r)
    std::copy_n(stage_.begin() + s.staged[r], s.flat[r].end - s.flat[r].begin,
                data.begin() + s.flat[r].begin);
}

HostAwareCollectives::HostAwareCollectives(Group& group, std::optional<uint32_t> levels_key,
                                           OnLevels on_levels)
    : group_(group), key_(levels_key), on_levels_(std::move(on_levels)) {}

HostAwareCollectives::~HostAwareCollectives() = default;

TwoLevelCollectives* HostAwareCollectives::laid_out() {
  if (!laid_out_) {
    const HostLayout layout = agreed_host_layout(group_);
    laid_out_ = true;
    if (two_levels_apply(layout)) {
      levels_ = std::make_unique<TwoLevelCollectives>(group_, layout, key_.value_or(group_.tag()));
      levels_text_ =
          std::to_string(layout.hosts.size()) + " hosts of " + std::to_string(layout.per_host) + " members";
      if (on_levels_) on_levels_(levels_text_);
    }
  }
  return levels_.get();
}

void HostAwareCollectives::allreduce(std::span<float> data) {
  if (TwoLevelCollectives* two = laid_out()) return two->run(data);
  Allreduce(group_, data).run();
}

void HostAwareCollectives::reduce_scatter(std::span<float> data, std::span<const size_t> counts) {
  if (TwoLevelCollectives* two = laid_out()) return two->reduce_scatter(data, counts);
  ReduceScatter(group_, data, counts).run();
}

void HostAwareCollectives::allgather(std::span<float> data, std::span<const size_t> counts) {
  if (TwoLevelCollectives* two = laid_out()) return two->allgather(data, counts);
  Allgather(group_, data, counts).run();
}

}  // namespace gossipd::protocol
