// DataLink's posted receives (protocol/collectives/data_link.h) over a socketpair: which
// frame lands in which post, what goes to the inbox instead, float adds
// split between reads, and a post withdrawn half way.
#include "protocol/collectives/data_link.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <numeric>
#include <vector>

namespace gossipd::protocol {
namespace {

constexpr uint32_t kTag = 7;

// A link reading one end of a socketpair; the test writes frames to the other.
class LinkPair {
 public:
  LinkPair() : link_("peer", 1 << 20, kTag) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    writer_ = Fd(sv[0]);
    link_.attach(Fd(sv[1]));
  }
  DataLink& link() { return link_; }

  // Writes `bytes` of frame (chunk, floats) in pieces of `split` bytes,
  // reading after each, and stops after `stop_after` bytes when given.
  void write(uint32_t chunk, const std::vector<float>& floats, size_t split = 1 << 20,
             size_t stop_after = SIZE_MAX) {
    const std::vector<std::byte> bytes = frame(chunk, floats);
    write_bytes(std::span<const std::byte>(bytes).subspan(0, std::min(stop_after, bytes.size())), split);
  }

  // Writes a whole frame and reads nothing: it waits in the socket.
  void write_unread(uint32_t chunk, const std::vector<float>& floats) {
    const std::vector<std::byte> bytes = frame(chunk, floats);
    ASSERT_EQ(::send(writer_.get(), bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }

  void write_bytes(std::span<const std::byte> bytes, size_t split) {
    for (size_t at = 0; at < bytes.size();) {
      const ssize_t n = ::send(writer_.get(), bytes.data() + at, std::min(split, bytes.size() - at), 0);
      ASSERT_GT(n, 0);
      at += static_cast<size_t>(n);
      ASSERT_TRUE(link_.read_available());
    }
  }

  static std::vector<std::byte> frame(uint32_t chunk, const std::vector<float>& floats) {
    wire::FrameHeader h;
    h.dtype = proto::DTYPE_FLOAT32;
    h.tag = kTag;
    h.seq = 1;
    h.chunk = chunk;
    h.bytes = floats.size() * sizeof(float);
    const wire::HeaderBytes header = wire::encode(h);
    std::vector<std::byte> bytes(header.begin(), header.end());
    const auto* p = reinterpret_cast<const std::byte*>(floats.data());
    bytes.insert(bytes.end(), p, p + h.bytes);
    return bytes;
  }

  // The chunks of the frames in the inbox, in order.
  std::vector<uint32_t> inbox_chunks() {
    std::vector<uint32_t> chunks;
    const auto any = [](const wire::FrameHeader&) { return true; };
    const auto none = [](const wire::FrameHeader&) { return false; };
    while (auto f = link_.take(any, none, [](const wire::FrameHeader&) {})) chunks.push_back(f->header.chunk);
    return chunks;
  }

 private:
  Fd writer_;
  DataLink link_;
};

std::vector<float> floats(size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

DataLink::Match chunk_is(uint32_t chunk) {
  return [chunk](const wire::FrameHeader& h) { return h.chunk == chunk; };
}

DataLink::Post post_into(std::vector<float>& dst, const DataLink::Match& match, bool add = false) {
  return {&match, reinterpret_cast<std::byte*>(dst.data()), dst.size() * sizeof(float), add};
}

TEST(DataLink, SeveralPostsEachTakeTheFrameTheyMatch) {
  LinkPair pair;
  std::vector<float> a(1000), b(1000);
  const auto match0 = chunk_is(0), match1 = chunk_is(1);
  DataLink::Post pa = post_into(a, match1), pb = post_into(b, match0);
  pair.link().post(&pa);
  pair.link().post(&pb);
  pair.write(0, floats(1000, 0.0f), 4096);
  pair.write(2, floats(1000, 2e3f));  // nobody posted it: the inbox
  pair.write(1, floats(1000, 1e3f), 777);
  EXPECT_TRUE(pa.done);
  EXPECT_TRUE(pb.done);
  EXPECT_EQ(a, floats(1000, 1e3f));
  EXPECT_EQ(b, floats(1000, 0.0f));
  EXPECT_EQ(pair.inbox_chunks(), std::vector<uint32_t>{2});
}

TEST(DataLink, PostOfAnotherSizeLeavesTheFrameToTheInbox) {
  LinkPair pair;
  std::vector<float> dst(999, -1.0f);
  const auto match = chunk_is(0);
  DataLink::Post p = post_into(dst, match);
  pair.link().post(&p);
  pair.write(0, floats(1000, 0.0f));
  EXPECT_FALSE(p.done);
  EXPECT_FALSE(p.started);
  EXPECT_EQ(dst, std::vector<float>(999, -1.0f));
  EXPECT_EQ(pair.inbox_chunks(), std::vector<uint32_t>{0});
  pair.link().withdraw(&p);
}

TEST(DataLink, AddingPostSumsFloatsSplitBetweenReads) {
  LinkPair pair;
  std::vector<float> dst = floats(5000, 1.0f);
  const auto match = chunk_is(3);
  DataLink::Post p = post_into(dst, match, true);
  pair.link().post(&p);
  pair.write(3, floats(5000, 10.0f), 4093);  // reads end mid-float
  ASSERT_TRUE(p.done);
  for (size_t i = 0; i < dst.size(); ++i) ASSERT_EQ(dst[i], 11.0f + 2.0f * static_cast<float>(i)) << i;
}

TEST(DataLink, WithdrawnHalfWayTheRestIsDroppedAndTheStreamGoesOn) {
  LinkPair pair;
  std::vector<float> dst(4000, 0.0f);
  const auto match = chunk_is(0);
  DataLink::Post p = post_into(dst, match);
  pair.link().post(&p);
  const std::vector<float> sent = floats(4000, 5.0f);
  const size_t frame_bytes = wire::kFrameHeaderBytes + sent.size() * sizeof(float);
  pair.write(0, sent, 1000, frame_bytes / 2);
  EXPECT_TRUE(p.started);
  EXPECT_FALSE(p.done);
  pair.link().withdraw(&p);
  const std::vector<float> before = dst;
  // The second half of that frame, then a whole one: only the whole one is kept.
  std::vector<std::byte> rest(frame_bytes - frame_bytes / 2);
  const auto* payload = reinterpret_cast<const std::byte*>(sent.data());
  std::memcpy(rest.data(), payload + (frame_bytes / 2 - wire::kFrameHeaderBytes), rest.size());
  pair.write_bytes(rest, 1000);
  pair.write(1, floats(10, 0.0f));
  EXPECT_FALSE(p.done);
  EXPECT_EQ(dst, before);  // nothing landed after the withdrawal
  EXPECT_EQ(pair.inbox_chunks(), std::vector<uint32_t>{1});
  EXPECT_FALSE(pair.link().broken());
}

// A peer that sends frames nobody takes fills the inbox up to the limit the
// caller gives (the per-sender byte limit), not past it by what the socket
// holds: the rest stays in the kernel until the inbox is taken.
TEST(DataLink, ReadingStopsAtTheInboxLimitAndTheRestWaitsInTheSocket) {
  LinkPair pair;
  constexpr size_t kFrames = 5, kFloats = 8192, kLimit = 40 << 10;  // frames of 32 KiB
  for (uint32_t c = 0; c < kFrames; ++c) pair.write_unread(c, floats(kFloats, static_cast<float>(c)));
  ASSERT_TRUE(pair.link().read_available(kLimit));
  EXPECT_GE(pair.link().inbox_bytes(), kLimit);
  EXPECT_LE(pair.link().inbox_bytes(), kLimit + (64 << 10) + kFloats * sizeof(float));
  std::vector<uint32_t> chunks = pair.inbox_chunks();
  EXPECT_LT(chunks.size(), kFrames) << "read past the limit";
  ASSERT_TRUE(pair.link().read_available(SIZE_MAX));
  for (uint32_t c : pair.inbox_chunks()) chunks.push_back(c);
  EXPECT_EQ(chunks, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace gossipd::protocol
