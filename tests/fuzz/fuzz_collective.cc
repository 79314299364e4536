// The ring allreduce's receive and reduce path: rank 0 of a 3-member group
// whose other ranks are whatever the input sends (chunks of any step, chunk,
// sequence and size). It must finish or throw PeerTimeout, never read or
// write outside its buffer.
#include <vector>

#include "protocol/collectives/ring.h"
#include "protocol/wire/errors.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Harness h;
  h.each_valid(data, size, [&](protocol::Message& m) { h.node->mailbox().push(std::move(m)); });
  protocol::CollectiveOptions o;
  o.timeout = std::chrono::milliseconds(0);
  o.chunk_bytes = 64;  // 16 floats: 3 pieces per block
  protocol::Group group(*h.node, /*tag=*/5, {"self", "m1", "m2"}, o);
  std::vector<float> x(100, 1.0f);
  try {
    protocol::allreduce_sum(group, x);
  } catch (const protocol::PeerTimeout&) {
  }
  return 0;
}
