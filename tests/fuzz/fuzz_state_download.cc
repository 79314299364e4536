// A joiner's download (receive_state) fed with whatever its contact m1 and
// the others send: it must return a state that matches the sizes asked for
// and its checksum, or throw a one-line error.
#include <cassert>

#include "daemon/cluster/state_transfer.h"
#include "protocol/errors.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Harness h;
  h.node->validator().set_open_types({proto::MEMBER_LIST, proto::STATE_CHUNK});
  h.each_valid(data, size, [&](protocol::Message& m) { h.node->mailbox().push(std::move(m)); });
  try {
    auto s = daemon::receive_state(*h.node, "m1", 40, 8, std::chrono::milliseconds(0), {});
    assert(s.params.size() == 40 && s.optimizer.size() == 8);
  } catch (const std::runtime_error&) {
    // mismatch, corruption or nothing more to read: the joiner reports it
  }
  return 0;
}
