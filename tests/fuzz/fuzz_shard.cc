// Compute groups' owner side: messages on the parameter shards' request tag
// from m1 and m2 (members of groups cg0 and cg1) or the stranger x, handled
// as the owner's service thread handles them. "self" owns shard 0 of 3
// (seeded); shards 1 and 2 are m1's and m2's. The same messages go to a
// second owner under --robust clip (shard_clip.h), which keeps the same
// count.
#include <cassert>
#include <vector>

#include "daemon/modes/groups/shard_requests.h"
#include "daemon/modes/groups/shard_wire.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

namespace {

// The store's invariant: each applied push adds one to the version; a push
// pulled at a later version than the store's (from an owner that left)
// moves it up, counted as lost; a refused push (--robust) adds nothing.
void checked(const daemon::ShardStore& store) {
  std::vector<float> values(10);
  const auto version = store.read(0, values);
  const daemon::ShardStats stats = store.stats();
  assert(version && *version == stats.applied + stats.lost);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Harness h;
  const daemon::ShardLayout layout(30, {"self", "m1", "m2"});
  daemon::ShardStore store(layout, trainer::OptimizerOptions{}),
      defended(layout, trainer::OptimizerOptions{});
  defended.defend(protocol::ClipSpec{}, "self");
  for (daemon::ShardStore* s : {&store, &defended}) {
    s->own({0});
    s->seed(0, std::vector<float>(10, 1.0f), 0);
  }
  protocol::ChangeSignal done;
  const daemon::ShardTags tags = daemon::shard_tags(protocol::tags::range(protocol::tags::User::kModes));
  const std::map<std::string, std::string> labels{{"self", "cg0"}, {"m1", "cg0"}, {"m2", "cg1"}};
  daemon::ShardRequests requests(*h.node, store, labels, std::chrono::milliseconds(10), done, tags.answer);
  daemon::ShardRequests robust(*h.node, defended, labels, std::chrono::milliseconds(10), done, tags.answer);
  // Every valid message, whatever its tag (the service takes those of the
  // request tag only): the tag is the registry's and the corpus may hold others.
  h.each_valid(data, size, [&](protocol::Message& m) {
    requests.handle(m);
    robust.handle(m);
  });
  checked(store);
  checked(defended);
  return 0;
}
