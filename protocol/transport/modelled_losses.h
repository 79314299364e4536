#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace gossipd::protocol {

// The gossip segments a modelled network loses: gossipctl simulate's time
// model says which messages arrive after their receiver's segment deadline
// (or are dropped), and its members, talking over an in-process hub that
// takes no time, skip exactly those, as gossipd run's receiver skips a
// segment at its deadline (SegmentInbox::receive). A message is named by the
// round it was sent in, its sender and receiver, and its segment.
class ModelledLosses {
 public:
  // `members`: the ids the model indexes, in its order.
  explicit ModelledLosses(std::vector<std::string> members);

  void add(uint64_t round, uint32_t from, uint32_t to, uint32_t segment);
  // Whether the model lost segment `segment` of round `round` from `from`
  // to `to`; false for ids it does not know.
  bool lost(uint64_t round, const std::string& from, const std::string& to, uint32_t segment) const;
  size_t size() const { return lost_.size(); }

 private:
  struct Key {
    uint64_t round;
    uint32_t from, to, segment;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  std::map<std::string, uint32_t> index_;
  std::unordered_set<Key, KeyHash> lost_;
};

}  // namespace gossipd::protocol
