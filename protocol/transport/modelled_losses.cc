#include "protocol/transport/modelled_losses.h"

namespace gossipd::protocol {

ModelledLosses::ModelledLosses(std::vector<std::string> members) {
  for (uint32_t i = 0; i < members.size(); ++i) index_.emplace(std::move(members[i]), i);
}

size_t ModelledLosses::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.round * 0x9e3779b97f4a7c15ULL;
  h ^= (static_cast<uint64_t>(k.from) << 40) ^ (static_cast<uint64_t>(k.to) << 16) ^ k.segment;
  h *= 0xbf58476d1ce4e5b9ULL;
  return static_cast<size_t>(h ^ (h >> 31));
}

void ModelledLosses::add(uint64_t round, uint32_t from, uint32_t to, uint32_t segment) {
  lost_.insert(Key{round, from, to, segment});
}

bool ModelledLosses::lost(uint64_t round, const std::string& from, const std::string& to,
                          uint32_t segment) const {
  if (lost_.empty()) return false;
  const auto f = index_.find(from), t = index_.find(to);
  if (f == index_.end() || t == index_.end()) return false;
  return lost_.count(Key{round, f->second, t->second, segment}) > 0;
}

}  // namespace gossipd::protocol
