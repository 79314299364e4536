// A joiner's download in two shares (download_state, asked of m1 and m2) fed
// with whatever m1 and the others send: it must return a state that matches
// the sizes asked for and each share's checksum, or throw a one-line error.
#include <cassert>

#include "daemon/cluster/share_download.h"
#include "protocol/wire/errors.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Harness h;
  h.node->validator().set_open_types({proto::MEMBER_LIST, proto::STATE_CHUNK});
  h.each_valid(data, size, [&](protocol::Message& m) { h.node->mailbox().push(std::move(m)); });
  try {
    daemon::DownloadPlan plan;
    plan.segment_lengths = {24, 16};
    plan.param_floats = 40;
    plan.optimizer_floats = 8;
    plan.shares = 2;
    plan.donors = {"m1", "m2"};
    plan.stall = std::chrono::milliseconds(0);
    auto d = daemon::download_state(*h.node, plan, {});
    assert(d.state.params.size() == 40 && d.state.optimizer.size() == 8 && d.donors.size() == 2);
  } catch (const std::runtime_error&) {
    // mismatch, corruption or nothing more to read: the joiner reports it
  }
  return 0;
}
