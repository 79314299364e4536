// Gossip's receive path: SEGMENT messages of one round from m1 and m2,
// taken in the order Crossover and SGP ask for them and averaged in. The
// round agrees to the codec (--compress) of the first valid segment, so the
// compressed payloads' decoding is fuzzed too.
#include <cassert>
#include <vector>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/segment_inbox.h"
#include "protocol/wire/codec.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint64_t> lengths = {16, 300, 5};
  fuzz::Harness h(lengths);
  protocol::CodecSpec agreed;
  bool first = true;
  h.each_valid(data, size, [&](protocol::Message& m) {
    if (first && m.envelope.type() == proto::SEGMENT) {
      if (auto spec = protocol::declared_spec(m.envelope)) agreed = *spec;
      first = false;
    }
    h.node->mailbox().push(std::move(m));
  });
  std::vector<float> x(16 + 300 + 5, 1.0f);
  protocol::SegmentInbox inbox(*h.node, /*tag=*/3, /*round=*/1, /*finish=*/true, agreed);
  for (const std::string peer : {"m1", "m2"}) {
    size_t offset = 0;
    for (uint32_t s = 0; s < lengths.size(); ++s) {
      auto m = inbox.receive(peer, s, lengths[s], std::chrono::steady_clock::now(), {});
      if (m) {
        assert(m->bytes().size() == lengths[s] * sizeof(float));
        protocol::add_floats(x.data() + offset, m->bytes().data(), lengths[s]);
      }
      offset += lengths[s];
    }
  }
  return 0;
}
