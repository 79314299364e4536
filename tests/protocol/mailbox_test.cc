// The mailbox: every sender bounded in bytes, chunks drained by tag,
// late segments counted as stale and late pacing notes not.
#include "protocol/transport/mailbox.h"

#include <gtest/gtest.h>

#include "protocol/wire/tags.h"

namespace gossipd::protocol {
namespace {

// A sender that races ahead (or floods) fills its own share of the mailbox
// and no more; other senders are not affected, and taking or finishing its
// messages frees the room again.
TEST(Mailbox, EverySenderIsBoundedInBytes) {
  RejectCounters counters;
  RejectLog log("self", counters);
  Mailbox box(log, /*max_control_queue=*/4, /*max_queued_bytes=*/2000);
  auto chunk = [](const std::string& sender, uint64_t seq) {
    Message m;
    m.envelope.set_sender(sender);
    m.envelope.set_type(proto::COLLECTIVE_CHUNK);
    m.envelope.set_collective_tag(7);
    m.envelope.set_collective_seq(seq);
    m.envelope.set_count(150);
    m.payload.emplace_back(std::vector<std::byte>(600));
    return m;
  };
  for (uint64_t seq = 10; seq < 20; ++seq) box.push(chunk("fast", seq));  // calls not begun yet
  EXPECT_EQ(counters.get(RejectReason::kQueueFull), 7u);                  // 3 x ~610 bytes fit in 2000
  EXPECT_LE(box.queued_bytes("fast"), 2000u);
  EXPECT_GT(box.queued_bytes("fast"), 1800u);
  box.push(chunk("slow", 10));
  EXPECT_EQ(counters.get(RejectReason::kQueueFull), 7u) << "another sender has its own room";
  ASSERT_TRUE(box.pop_chunk(ChunkKey{7, 10, "fast"}, Mailbox::Clock::now(), {}));
  const size_t after_pop = box.queued_bytes("fast");
  EXPECT_LT(after_pop, 1400u);
  box.push(chunk("fast", 20));
  EXPECT_EQ(counters.get(RejectReason::kQueueFull), 7u) << "taking a message frees its room";
  box.finish(7, 100);
  EXPECT_EQ(box.queued_bytes("fast"), 0u);
  EXPECT_EQ(box.queued_bytes("slow"), 0u);
  // Control messages count too; a full control queue drops its oldest.
  for (int i = 0; i < 6; ++i) {
    Message m;
    m.envelope.set_sender("fast");
    m.envelope.set_type(proto::HEARTBEAT);
    m.envelope.set_round(static_cast<uint64_t>(i));
    box.push(std::move(m));
  }
  const size_t four = box.queued_bytes("fast");
  EXPECT_GT(four, 0u);
  auto first = box.pop(proto::HEARTBEAT, Mailbox::Clock::now(), {});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->envelope.round(), 2u) << "the two oldest were dropped";
  EXPECT_LT(box.queued_bytes("fast"), four);
}

// drain() takes one sender's chunks of one tag, whatever their seq, oldest
// first, and frees their room; other senders and tags keep theirs.
TEST(Mailbox, DrainTakesOneSendersChunksOfATagWhateverTheirSeq) {
  RejectCounters counters;
  RejectLog log("self", counters);
  Mailbox box(log);
  auto chunk = [](const std::string& sender, uint32_t tag, uint64_t seq) {
    Message m;
    m.envelope.set_sender(sender);
    m.envelope.set_type(proto::SEGMENT);
    m.envelope.set_collective_tag(tag);
    m.envelope.set_collective_seq(seq);
    m.envelope.set_count(4);
    m.payload.emplace_back(std::vector<std::byte>(16));
    return m;
  };
  for (uint64_t seq : {9, 3, 40}) box.push(chunk("a", 7, seq));
  box.push(chunk("a", 7, 3));  // a second chunk of one seq
  box.push(chunk("b", 7, 5));
  box.push(chunk("a", 8, 1));
  const auto got = box.drain(7, "a");
  ASSERT_EQ(got.size(), 4u);
  std::vector<uint64_t> seqs;
  for (const auto& m : got) seqs.push_back(m.envelope.collective_seq());
  EXPECT_EQ(seqs, (std::vector<uint64_t>{3, 3, 9, 40}));
  EXPECT_TRUE(box.drain(7, "a").empty()) << "drained once";
  EXPECT_EQ(box.drain(7, "b").size(), 1u);
  EXPECT_TRUE(box.pop_chunk(ChunkKey{8, 1, "a"}, Mailbox::Clock::now(), {})) << "another tag kept";
  EXPECT_EQ(box.queued_bytes("a"), 0u);
  EXPECT_EQ(box.queued_bytes("b"), 0u);
}

// After a round ends, a segment for it is stale (counted); a pacing note
// for it is only dropped: the waiting side repeats notes on purpose.
TEST(Mailbox, LateSegmentsAreStaleLatePacingNotesAreNot) {
  RejectCounters counters;
  RejectLog log("self", counters);
  Mailbox box(log);
  auto message = [](uint32_t tag, uint64_t round, size_t floats) {
    Message m;
    m.envelope.set_sender("peer");
    m.envelope.set_type(proto::COLLECTIVE_CHUNK);
    m.envelope.set_collective_tag(tag);
    m.envelope.set_collective_seq(round);
    m.envelope.set_count(floats);
    if (floats > 0) m.payload.emplace_back(std::vector<std::byte>(floats * sizeof(float)));
    return m;
  };
  // As SegmentInbox finishes a round: its segments, and its notes as expected late.
  const uint32_t crossover = tags::first(tags::User::kCrossover);
  box.finish(crossover, 5);
  box.finish(tags::ready_tag(crossover), 5, Mailbox::Late::kExpected);
  box.push(message(tags::ready_tag(crossover), 4, 0));
  EXPECT_EQ(counters.get(RejectReason::kStale), 0u);
  EXPECT_EQ(box.queued_bytes("peer"), 0u) << "dropped, not queued";
  box.push(message(crossover, 4, 3));
  EXPECT_EQ(counters.get(RejectReason::kStale), 1u);
  // A collective whose tag has the ready bit set (a group's view id) is no
  // note: finished as usual, what comes late is stale.
  const uint32_t group = tags::range(tags::User::kHierarchicalGroup).at(0x80 << 8);
  ASSERT_NE(group & tags::kReadyBit, 0u);
  box.finish(group, 5);
  box.push(message(group, 4, 0));
  EXPECT_EQ(counters.get(RejectReason::kStale), 2u);
}

}  // namespace
}  // namespace gossipd::protocol
