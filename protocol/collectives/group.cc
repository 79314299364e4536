#include "protocol/collectives/group.h"

#include <algorithm>
#include <set>

#include "protocol/collectives/group_wire.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

size_t piece_count(size_t count, const CollectiveOptions& options) {
  const size_t chunk_elems = std::max<size_t>(1, options.chunk_bytes / sizeof(float));
  return (count + chunk_elems - 1) / chunk_elems;
}

std::vector<std::string> members_at(const std::vector<std::string>& members, std::span<const size_t> ranks) {
  std::vector<std::string> ids;
  for (size_t r : ranks) ids.push_back(members.at(r));
  return ids;
}

std::vector<BlockRange> block_layout(size_t count, size_t parts, std::span<const size_t> counts,
                                     const std::string& what) {
  if (!counts.empty() && counts.size() != parts) {
    throw ProtocolConfigError(what + ": " + std::to_string(counts.size()) + " block counts for a group of " +
                              std::to_string(parts));
  }
  std::vector<BlockRange> blocks;
  blocks.reserve(parts);
  size_t end = 0;
  for (size_t b = 0; b < parts; ++b) {
    blocks.push_back(counts.empty() ? block_range(count, parts, b) : BlockRange{end, end + counts[b]});
    end = blocks.back().end;
  }
  if (!counts.empty() && end != count) {
    throw ProtocolConfigError(what + ": block counts add up to " + std::to_string(end) +
                              ", the buffer holds " + std::to_string(count));
  }
  return blocks;
}

Group::Group(Node& node, uint32_t tag, std::vector<std::string> members, CollectiveOptions options)
    : node_(node), tag_(tag), members_(std::move(members)), options_(std::move(options)) {
  auto it = std::find(members_.begin(), members_.end(), node_.id());
  if (it == members_.end()) {
    throw ProtocolConfigError("group " + std::to_string(tag) + ": node '" + node_.id() + "' is not a member");
  }
  if (std::set<std::string>(members_.begin(), members_.end()).size() != members_.size()) {
    throw ProtocolConfigError("group " + std::to_string(tag) + ": repeated member id");
  }
  if (options_.chunk_bytes < 64) throw ProtocolConfigError("collective chunk_bytes must be >= 64");
  rank_ = static_cast<size_t>(it - members_.begin());
}

Group::~Group() = default;

GroupWire* Group::wire() {
  if (!wire_ && node_.data_listener() && size() > 1) wire_ = std::make_unique<GroupWire>(*this);
  return wire_.get();
}

}  // namespace gossipd::protocol
