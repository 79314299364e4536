// Compute groups' parameter shards over the real ZeroMQ loopback transport,
// members as threads: every push applied exactly once under duplicated and
// reordered messages, bad pushes refused and counted while the owner goes
// on serving, and a shard whose owner left seeded from a group's copy.
#include "daemon/modes/groups/shard_service.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stop_token>

#include "daemon/modes/groups/shard_client.h"
#include "daemon/modes/groups/shard_store.h"
#include "daemon/modes/groups/shard_wire.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::daemon {
namespace {

// The shards' tags as the registry lays out the compute groups' range (the
// first mode that asks for tags: the start of the modes' block).
constexpr ShardTags kTags = shard_tags(protocol::tags::range(protocol::tags::User::kModes));

using namespace std::chrono_literals;
using protocol::testing::TestCluster;

trainer::OptimizerOptions served_sgd() {
  trainer::OptimizerOptions o;
  o.momentum = 0;
  return o;
}

// The members of a test's view, which a test may shrink.
class View {
 public:
  explicit View(std::vector<std::string> ids) : ids_(std::move(ids)) {}
  AliveMembers alive() {
    return [this] {
      std::lock_guard lock(mu_);
      return ids_;
    };
  }
  void drop(const std::string& id) {
    {
      std::lock_guard lock(mu_);
      std::erase(ids_, id);
    }
    changes.notify();
  }
  protocol::ChangeSignal changes;  // notified when the view shrinks

 private:
  std::mutex mu_;
  std::vector<std::string> ids_;
};

// One member's owner side and group side.
struct Member {
  Member(protocol::Node& node, View& view, const ShardLayout& layout,
         std::map<std::string, std::string> labels, protocol::CodecSpec codec = {})
      : store(layout, served_sgd()),
        service(std::make_unique<ShardService>(node, view.alive(), view.changes, store, labels, 1000ms, kTags,
                                               codec)),
        client(node, view.alive(), store, *service, labels.at(node.id()),
               ShardClientOptions{50ms, 10000ms, 1000ms, codec, kTags}) {}
  ShardStore store;
  std::unique_ptr<ShardService> service;
  ShardClient client;
};

constexpr size_t kParams = 64;
constexpr float kLr = 0.01f;

TEST(ShardService, TwoGroupsOfTwoApplyEveryPushOnceUnderDuplicatesAndReorders) {
  protocol::NodeOptions o;
  o.faults.duplicate = 0.3;
  o.faults.reorder = 0.3;
  o.faults.seed = 7;
  TestCluster c(4, o);
  View view(c.ids());
  const ShardLayout layout(kParams, c.ids());
  const std::map<std::string, std::string> labels{{"n0", "cg0"}, {"n1", "cg0"}, {"n2", "cg1"}, {"n3", "cg1"}};
  std::vector<std::unique_ptr<Member>> m;
  for (size_t r = 0; r < 4; ++r) {
    c.node(r).arm_faults();
    m.push_back(std::make_unique<Member>(c.node(r), view, layout, labels));
  }
  constexpr uint64_t kSteps = 40;
  protocol::testing::expect_no_errors(c.run([&](size_t r) {
    std::vector<float> params(kParams, 1.0f);
    const std::vector<float> grads(kParams, 1.0f);
    for (uint64_t step = 1; step <= kSteps; ++step)
      m[r]->client.exchange(step, kLr, layout.slice(r % 2, 2), grads, params, {});
  }));
  uint64_t applied = 0, repeats = 0, duplicated = 0;
  for (size_t r = 0; r < 4; ++r) {
    const ShardStats x = m[r]->store.stats();
    applied += x.applied;
    repeats += x.duplicate;
    duplicated += c.node(r).fault_counts().duplicated;
    std::vector<float> values(layout.range(r).size());
    ASSERT_EQ(m[r]->store.read(r, values), 2 * kSteps);
    for (float v : values) EXPECT_NEAR(v, 1.0f - 2 * kSteps * kLr, 1e-5) << "shard " << r;
  }
  EXPECT_EQ(applied, 2 * kSteps * 4) << "two groups, every step, four shards: each once";
  EXPECT_GT(duplicated, 0u);
  EXPECT_GT(repeats, 0u) << "no duplicated push reached an owner: the test tested nothing";
}

TEST(ShardService, PushesNotOwnedMisSizedOrRepeatedAreRefusedAndCountedAndServingGoesOn) {
  TestCluster c(2);
  View view(c.ids());
  const ShardLayout layout(8, c.ids());
  const std::map<std::string, std::string> labels{{"n0", "cg0"}, {"n1", "cg1"}};
  Member owner(c.node(1), view, layout, labels);
  owner.service->follow_view();
  ASSERT_TRUE(owner.store.owns(1));
  owner.store.seed(1, std::vector<float>(4, 1.0f), 0);
  protocol::Node& from = c.node(0);
  auto push = [&](uint64_t step, uint32_t shard, size_t n) {
    ShardMessage msg{proto::SHARD_PUSH, step, shard, {}};
    msg.note.set_learning_rate(kLr);
    return send_shard(from, "n1", kTags.request, msg, std::vector<float>(n, 1.0f), 1000ms);
  };
  ASSERT_TRUE(push(1, 0, 4));                      // shard 0 is n0's
  ASSERT_TRUE(push(1, 1, 3));                      // shard 1 has 4 elements
  ASSERT_TRUE(push(1, 1, 4));                      // applied
  ASSERT_TRUE(push(1, 1, 4));                      // a repeat: answered, not applied
  ShardMessage odd{proto::SHARD_FRESH, 1, 1, {}};  // an answer sent to the request tag
  ASSERT_TRUE(send_shard(from, "n1", kTags.request, odd, std::vector<float>(4, 0.0f), 1000ms));
  ASSERT_TRUE(push(2, 1, 4));  // applied: the owner went on
  int answers = 0;
  while (auto a = from.mailbox().pop_tag(kTags.answer, std::chrono::steady_clock::now() + 5s, {})) {
    EXPECT_EQ(a->envelope.step(), static_cast<uint32_t>(proto::SHARD_FRESH));
    if (++answers == 3) break;
  }
  EXPECT_EQ(answers, 3);
  const ShardStats x = owner.store.stats();
  EXPECT_EQ(x.applied, 2u);
  EXPECT_EQ(x.duplicate, 1u);
  EXPECT_EQ(x.not_owned, 1u);
  EXPECT_EQ(x.mis_sized, 1u);
  const auto rejects = c.node(1).counters().snapshot();
  uint64_t total = 0;
  for (const auto& [reason, n] : rejects) total += n;
  EXPECT_EQ(total, 4u) << "not owned, mis-sized, repeated, an answer where pushes go";
  std::vector<float> values(4);
  EXPECT_EQ(owner.store.read(1, values), 2u);
  EXPECT_FLOAT_EQ(values[0], 1.0f - 2 * kLr);
}

// A push holding NaN or an infinity (a member whose training diverged, or
// one that cannot be trusted) is not applied: counted as non-finite against
// its sender, answered with the shard as it was, and serving goes on.
TEST(ShardService, APushHoldingNaNIsRefusedHeldAgainstItsSenderAndAnsweredWithTheShardAsItWas) {
  TestCluster c(2);
  View view(c.ids());
  const ShardLayout layout(8, c.ids());
  Member owner(c.node(1), view, layout, {{"n0", "cg0"}, {"n1", "cg1"}});
  owner.service->follow_view();
  ASSERT_TRUE(owner.store.owns(1));
  owner.store.seed(1, std::vector<float>(4, 1.0f), 0);
  protocol::Node& from = c.node(0);
  auto push = [&](uint64_t step, float value) {
    ShardMessage msg{proto::SHARD_PUSH, step, 1, {}};
    msg.note.set_learning_rate(kLr);
    std::vector<float> grad(4, 1.0f);
    grad[2] = value;
    return send_shard(from, "n1", kTags.request, msg, grad, 1000ms);
  };
  ASSERT_TRUE(push(1, std::numeric_limits<float>::quiet_NaN()));
  ASSERT_TRUE(push(2, std::numeric_limits<float>::infinity()));
  ASSERT_TRUE(push(3, 1.0f));
  std::vector<float> answered;
  for (int k = 0; k < 3; ++k) {
    auto a = from.mailbox().pop_tag(kTags.answer, std::chrono::steady_clock::now() + 5s, {});
    ASSERT_TRUE(a) << "answer " << k << " never came";
    EXPECT_EQ(a->envelope.step(), static_cast<uint32_t>(proto::SHARD_FRESH));
    float first = 0;
    std::memcpy(&first, a->payload.at(0).data(), sizeof(float));
    answered.push_back(first);
  }
  EXPECT_EQ(answered, (std::vector<float>{1.0f, 1.0f, 1.0f - kLr})) << "the refused pushes left it as it was";
  EXPECT_EQ(owner.store.stats().applied, 1u);
  EXPECT_EQ(c.node(1).counters().get(protocol::RejectReason::kNonFinite), 2u);
  EXPECT_EQ(c.node(1).counters().against().at("n0"), 2u);
}

// --compress int8: a push in the run's codec is applied and answered in it;
// one in float32 (a member started without --compress) is counted as a
// codec reject and dropped, and the owner goes on serving.
TEST(ShardService, InACodecPushesAndAnswersTravelInItAndAnotherCodecIsCountedAndDropped) {
  TestCluster c(2);
  View view(c.ids());
  const ShardLayout layout(64, c.ids());
  const std::map<std::string, std::string> labels{{"n0", "cg0"}, {"n1", "cg1"}};
  const protocol::CodecSpec int8{protocol::Codec::kInt8, 16};
  Member owner(c.node(1), view, layout, labels, int8);
  owner.service->follow_view();
  ASSERT_TRUE(owner.store.owns(1));
  owner.store.seed(1, std::vector<float>(32, 1.0f), 0);
  protocol::Node& from = c.node(0);
  ShardMessage msg{proto::SHARD_PUSH, 1, 1, {}};
  msg.note.set_learning_rate(kLr);
  const uint64_t before = c.node(1).counters().get(protocol::RejectReason::kCodec);
  ASSERT_TRUE(send_shard(from, "n1", kTags.request, msg, std::vector<float>(32, 1.0f), 1000ms));
  const std::vector<float> grad(32, 1.0f);
  const protocol::EncodedSegment encoded{
      int8, grad.size(), std::make_shared<const std::vector<std::byte>>(protocol::encode(int8, grad))};
  msg.step = 2;
  ASSERT_TRUE(send_encoded_shard(from, "n1", kTags.request, msg, encoded, 1000ms));
  const auto answer = from.mailbox().pop_tag(kTags.answer, std::chrono::steady_clock::now() + 5s, {});
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->envelope.collective_seq(), 2u) << "the float32 push of step 1 was not answered";
  EXPECT_EQ(answer->envelope.dtype(), proto::DTYPE_INT8_BLOCKS);
  ASSERT_TRUE(read_shard(from, *answer, int8));
  const std::vector<float> values = shard_values(*answer);
  ASSERT_EQ(values.size(), 32u);
  EXPECT_NEAR(values[0], 1.0f - kLr, 1.0f / 254) << "the owner applied the decoded push, once";
  EXPECT_EQ(owner.store.stats().applied, 1u);
  EXPECT_EQ(c.node(1).counters().get(protocol::RejectReason::kCodec), before + 1);
}

TEST(ShardService, AShardWhoseOwnerLeftMovesAndIsSeededFromTheGroupsCopy) {
  TestCluster c(3);
  View view(c.ids());
  const ShardLayout layout(30, c.ids());
  const std::map<std::string, std::string> labels{{"n0", "cg0"}, {"n1", "cg1"}, {"n2", "cg2"}};
  std::vector<std::unique_ptr<Member>> m;
  for (size_t r = 0; r < 3; ++r) m.push_back(std::make_unique<Member>(c.node(r), view, layout, labels));
  // n0 alone is a group: it pushes every shard.
  std::vector<float> params(30, 1.0f);
  const std::vector<float> grads(30, 1.0f);
  for (uint64_t step = 1; step <= 5; ++step) m[0]->client.exchange(step, kLr, {0, 3}, grads, params, {});
  m[2]->service.reset();  // n2 leaves: shard 2 moves to alive[2 % 2] = n0
  view.drop("n2");
  for (uint64_t step = 6; step <= 10; ++step) m[0]->client.exchange(step, kLr, {0, 3}, grads, params, {});
  const ShardStats x = m[0]->store.stats();
  EXPECT_EQ(x.owned, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(x.seeded_later, 1u);
  EXPECT_EQ(x.lost, 0u);
  for (float v : params) EXPECT_NEAR(v, 1.0f - 10 * kLr, 1e-6) << "every step applied once";
  std::vector<float> values(10);
  EXPECT_EQ(m[0]->store.read(2, values), 10u) << "the seed carried the version it was pulled at";
}

}  // namespace
}  // namespace gossipd::daemon
