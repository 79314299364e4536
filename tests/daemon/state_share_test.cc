// A joiner's state in shares (daemon/cluster/state_share.h) and its download
// from several donors (share_download.h), on in-process nodes: shares tile
// the state, SGP's are cut on segment boundaries, a silent donor's share is
// asked of another and the result is the donors' floats, each share checked.
#include "daemon/cluster/state_share.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "daemon/cluster/share_download.h"
#include "daemon/cluster/state_transfer.h"
#include "protocol/transport/inproc_transport.h"
#include "protocol/transport/node.h"
#include "protocol/wire/errors.h"

namespace gossipd::testing {
namespace {

using daemon::ShareSpan;

TEST(StateShare, SharesTileTheStateAndCutSegmentsOnlyAtTheirBoundaries) {
  const std::vector<uint64_t> lengths = {1000, 10, 5000, 300, 70000, 64, 20000};
  const size_t params = std::accumulate(lengths.begin(), lengths.end(), size_t{0}), opt = 2 * params;
  std::vector<size_t> bounds{0};
  for (uint64_t l : lengths) bounds.push_back(bounds.back() + l);
  for (uint32_t of = 1; of <= lengths.size(); ++of) {
    size_t p = 0, o = 0;
    for (uint32_t i = 0; i < of; ++i) {
      const ShareSpan s = daemon::share_span(lengths, params, opt, i, of);
      EXPECT_EQ(s.param_begin, p) << i << " of " << of;
      EXPECT_EQ(s.optimizer_begin, o) << i << " of " << of;
      EXPECT_LT(s.param_begin, s.param_end) << "share " << i << " of " << of << " holds no segment";
      EXPECT_NE(std::find(bounds.begin(), bounds.end(), s.param_end), bounds.end()) << "cut inside a segment";
      p = s.param_end;
      o = s.optimizer_end;
    }
    EXPECT_EQ(p, params);
    EXPECT_EQ(o, opt);
  }
  // Without segments the parameters are cut evenly.
  const ShareSpan even = daemon::share_span({}, 1000, 0, 1, 4);
  EXPECT_EQ(even.param_begin, 250u);
  EXPECT_EQ(even.param_end, 500u);
}

TEST(StateShare, HowManySharesIsBoundedByDonorsSegmentsAndSize) {
  const std::vector<uint64_t> three = {100000, 100000, 100000};
  EXPECT_EQ(daemon::share_count(three, 300000, 300000, 10, 4), 3u) << "one share per segment";
  EXPECT_EQ(daemon::share_count({}, 300000, 300000, 10, 4), 4u) << "--join-donors";
  EXPECT_EQ(daemon::share_count({}, 300000, 300000, 2, 4), 2u) << "members to ask";
  EXPECT_EQ(daemon::share_count({}, 40000, 40000, 10, 4), 2u) << "none under 32 Ki floats";
  EXPECT_EQ(daemon::share_count({}, 10, 0, 10, 4), 1u);
  proto::Hello hello;
  hello.add_segment_lengths(7);
  EXPECT_TRUE(daemon::share_cut_lengths(hello).empty()) << "only push-sum needs segment cuts";
  hello.set_shares_on_segments(true);
  EXPECT_EQ(daemon::share_cut_lengths(hello), std::vector<uint64_t>{7});
}

// Three donors on an in-process hub; `silent` answers no ask.
struct Donors {
  protocol::InProcHub hub;
  std::map<std::string, std::unique_ptr<protocol::Node>> nodes;
  std::unique_ptr<protocol::Node> joiner;

  Donors() {
    joiner = std::make_unique<protocol::Node>(options("joiner"), hub);
    joiner->validator().set_open_types({proto::STATE_CHUNK});
    for (const char* id : {"d0", "d1", "d2"}) {
      nodes[id] = std::make_unique<protocol::Node>(options(id), hub);
      nodes[id]->add_peer("joiner", "inproc-hub://joiner");
      joiner->add_peer(id, std::string("inproc-hub://") + id);
    }
  }
  static protocol::NodeOptions options(const std::string& id) {
    protocol::NodeOptions o;
    o.id = id;
    o.validation.cluster_id = "shares";
    return o;
  }
};

// Donor `id`'s state: every float says who sent it; its SGP weights likewise.
std::shared_ptr<daemon::ReplicaState> state_of(float who, size_t params, size_t opt, size_t segments) {
  auto st = std::make_shared<daemon::ReplicaState>();
  st->params.assign(params, who);
  st->optimizer.assign(opt, -who);
  st->header.set_step(static_cast<uint64_t>(who));
  for (size_t s = 0; s < segments; ++s) st->header.add_push_sum_weights(who);
  daemon::seal(*st);
  return st;
}

TEST(ShareDownload, ASilentDonorsShareIsAskedOfAnotherAndEachShareComesFromItsSender) {
  Donors net;
  const std::vector<uint64_t> lengths = {40000, 40000, 40000};
  const size_t params = 120000, opt = 120000;
  std::map<std::string, std::vector<uint32_t>> asked;
  daemon::DownloadPlan plan;
  plan.segment_lengths = lengths;
  plan.param_floats = params;
  plan.optimizer_floats = opt;
  plan.shares = 2;
  plan.donors = {"d0", "d1", "d2"};
  plan.stall = std::chrono::milliseconds(300);
  plan.ask = [&](const std::string& donor, uint32_t index) {
    asked[donor].push_back(index);
    if (donor == "d1") return;  // silent: it died after the contact's table named it
    const float who = donor == "d0" ? 1.0f : 3.0f;
    const auto span = daemon::share_span(lengths, params, opt, index, 2);
    daemon::send_state(*net.nodes[donor], "joiner", state_of(who, params, opt, 3), index, span, 4096,
                       std::chrono::seconds(5));
  };
  const daemon::Download d = daemon::download_state(*net.joiner, plan, {});
  EXPECT_EQ(d.donors, (std::vector<std::string>{"d0", "d2"}));
  EXPECT_EQ(d.reasked, 1u);
  EXPECT_EQ(asked["d1"], std::vector<uint32_t>{1});
  EXPECT_EQ(asked["d2"], std::vector<uint32_t>{1});
  // Share 0 from d0, share 1 from d2; the parameters cut on the boundary
  // nearest half (40,000 and 80,000 are as near: the first).
  const ShareSpan s0 = daemon::share_span(lengths, params, opt, 0, 2);
  EXPECT_EQ(s0.param_end, 40000u);
  for (size_t i = 0; i < params; i += 1000) EXPECT_EQ(d.state.params[i], i < s0.param_end ? 1.0f : 3.0f) << i;
  for (size_t i = 0; i < opt; i += 1000)
    EXPECT_EQ(d.state.optimizer[i], i < s0.optimizer_end ? -1.0f : -3.0f) << i;
  ASSERT_EQ(d.state.header.push_sum_weights_size(), 3);
  EXPECT_DOUBLE_EQ(d.state.header.push_sum_weights(0), 1.0) << "a segment's weight from its share's donor";
  EXPECT_DOUBLE_EQ(d.state.header.push_sum_weights(2), 3.0);
  EXPECT_EQ(d.state.header.step(), 1u) << "share 0's header";
}

// Shares that split no mass: d0 snapshots at once, d1 and d2 are still
// before their step boundary. d0, done with its share, takes over the
// others one after another; d1's stream, come once d0 had its share, is
// dropped.
TEST(ShareDownload, ADonorDoneWithItsShareTakesOverTheSharesWhoseDonorsHaveNotStarted) {
  Donors net;
  const size_t params = 120000, opt = 120000;
  std::map<std::string, std::vector<uint32_t>> asked;
  daemon::DownloadPlan plan;
  plan.param_floats = params;
  plan.optimizer_floats = opt;
  plan.shares = 3;
  plan.donors = {"d0", "d1", "d2"};
  plan.stall = std::chrono::seconds(30);  // no share is asked again for silence here
  plan.take_over = true;
  const auto d0_state = state_of(1.0f, params, opt, 0);
  auto send = [&](const std::string& donor, float who, uint32_t index) {
    const auto span = daemon::share_span({}, params, opt, index, 3);
    daemon::send_state(*net.nodes[donor], "joiner", who == 1.0f ? d0_state : state_of(who, params, opt, 0),
                       index, span, 4096, std::chrono::seconds(5));
  };
  plan.ask = [&](const std::string& donor, uint32_t index) {
    asked[donor].push_back(index);
    if (donor != "d0") return;            // d1, d2: waiting for their step boundary
    if (index == 1) send("d1", 2.0f, 1);  // d1 starts late: after d0 was asked for its share
    send("d0", 1.0f, index);
  };
  const daemon::Download d = daemon::download_state(*net.joiner, plan, {});
  EXPECT_EQ(d.donors, (std::vector<std::string>{"d0", "d0", "d0"}));
  EXPECT_EQ(d.taken_over, 2u);
  EXPECT_EQ(d.reasked, 0u);
  EXPECT_EQ(asked["d0"], (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(asked["d1"], std::vector<uint32_t>{1});
  EXPECT_EQ(asked["d2"], std::vector<uint32_t>{2});
  for (size_t i = 0; i < params; i += 1000) EXPECT_EQ(d.state.params[i], 1.0f) << i;
  for (size_t i = 0; i < opt; i += 1000) EXPECT_EQ(d.state.optimizer[i], -1.0f) << i;
}

TEST(ShareDownload, ACorruptShareOrNoDonorLeftIsAOneLineError) {
  Donors net;
  daemon::DownloadPlan plan;
  plan.param_floats = 100;
  plan.optimizer_floats = 0;
  plan.shares = 1;
  plan.donors = {"d0", "d1"};
  plan.stall = std::chrono::milliseconds(100);
  plan.ask = [](const std::string&, uint32_t) {};
  try {
    daemon::download_state(*net.joiner, plan, {});
    ADD_FAILURE() << "no donor sent anything";
  } catch (const daemon::StateTransferError& e) {
    EXPECT_NE(std::string(e.what()).find("no other member is left to ask"), std::string::npos) << e.what();
  }
  // A header whose CRC-32 is of other floats than the chunks that follow (corrupted on the way).
  plan.ask = [&](const std::string& donor, uint32_t index) {
    protocol::Node& node = *net.nodes[donor];
    proto::Envelope head = node.envelope(proto::STATE_CHUNK);
    head.set_dtype(proto::DTYPE_FLOAT32);
    head.set_chunk(index);
    *head.mutable_state_header() = state_of(2.0f, 100, 0, 0)->header;
    node.transport().send("joiner", {protocol::envelope_frame(head), protocol::OutFrame::from_string({})},
                          std::chrono::seconds(5));
    std::vector<float> floats(100, 2.0f);
    floats[7] = 99.0f;
    proto::Envelope e = node.envelope(proto::STATE_CHUNK);
    e.set_dtype(proto::DTYPE_FLOAT32);
    e.set_segment_id(daemon::kStateParams);
    e.set_count(100);
    e.set_chunk(index);
    node.transport().send("joiner",
                          {protocol::envelope_frame(e), protocol::OutFrame::copy_of(floats.data(), 400)},
                          std::chrono::seconds(5));
  };
  try {
    daemon::download_state(*net.joiner, plan, {});
    ADD_FAILURE() << "a corrupted share was taken";
  } catch (const daemon::StateTransferError& e) {
    EXPECT_NE(std::string(e.what()).find("CRC-32"), std::string::npos) << e.what();
  }
}

// A joiner whose HELLO gave other sizes than the donor's state (the fuzzer
// found one a permissive join policy let through): its span reaches past the
// state. The donor sends nothing and says why, rather than read past its buffers.
TEST(ShareDownload, ASpanPastTheDonorsStateIsRefusedAndNothingIsSent) {
  Donors net;
  const auto state = state_of(1.0f, 40, 8, 0);
  for (const ShareSpan& span :
       {daemon::whole_state(40, 9), daemon::whole_state(41, 8), ShareSpan{5, 4, 0, 8}}) {
    try {
      daemon::send_state(*net.nodes["d0"], "joiner", state, 7, span, 64, std::chrono::seconds(5));
      ADD_FAILURE() << "a span past the state was sent";
    } catch (const daemon::StateTransferError& e) {
      EXPECT_NE(std::string(e.what()).find("this member holds 40 and 8"), std::string::npos) << e.what();
    }
  }
  // Then a share that fits, as share 0: what d0 sends arrives in order, so
  // the first chunk the joiner sees is this one's unless a refused one leaked.
  daemon::send_state(*net.nodes["d0"], "joiner", state, 0, daemon::whole_state(40, 8), 64,
                     std::chrono::seconds(5));
  const auto first = net.joiner->mailbox().pop(
      proto::STATE_CHUNK, std::chrono::steady_clock::now() + std::chrono::seconds(10), {});
  ASSERT_TRUE(first.has_value()) << "the share that fits never came";
  EXPECT_EQ(first->envelope.chunk(), 0u) << "a refused share sent a chunk";
}

}  // namespace
}  // namespace gossipd::testing
