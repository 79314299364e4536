// Direct connections between members on one host through shared memory
// (DataLink's pipes, protocol/shm/shm_pipe.h): every pair switches both ways and
// the collectives give what the sockets give; a /dev/shm without room keeps
// the sockets with one warning; offers and switches a peer should not send
// are refused or break the link, counted; names of makers that died go.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "protocol/collectives/data_link.h"
#include "protocol/collectives/group_wire.h"
#include "protocol/collectives/ring.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/captured_log.h"
#include "tests/support/file_size_limit.h"

namespace gossipd::protocol {
namespace {

using testing::rank_input;
using testing::TestCluster;

constexpr uint32_t kLinkTag = 13;
constexpr size_t kCount = 300000;  // several times a pipe: the writer waits for room
constexpr int kCalls = 20;

struct Outcome {
  std::vector<std::vector<float>> sums;
  std::vector<size_t> shared_links;
};

// kCalls ring allreduces of every rank's input on `n` members, then what
// each holds and how many of its links went onto shared memory. No
// spinning: every wait sleeps in poll(2), so every wake-up is a doorbell
// (or a frame on the socket during the switch).
Outcome allreduce_on(size_t n, const NodeOptions& options) {
  TestCluster cluster(n, options);
  Outcome out{std::vector<std::vector<float>>(n), std::vector<size_t>(n)};
  CollectiveOptions sleepy;
  sleepy.spin = std::chrono::microseconds(0);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kLinkTag, cluster.ids(), sleepy);
    for (int k = 0; k < kCalls; ++k) {
      out.sums[r] = rank_input(r + static_cast<size_t>(k), kCount);
      AllreduceRing(g, out.sums[r]).run();
    }
    out.shared_links[r] = g.wire()->shared_links();
  }));
  return out;
}

NodeOptions sockets_only() {
  NodeOptions o = TestCluster::default_options();
  o.shared_memory_bytes = 0;
  return o;
}

TEST(SharedLinks, MembersOnOneHostSwitchBothWaysAndSumAsOverSockets) {
  NodeOptions small = TestCluster::default_options();
  small.shared_memory_bytes = 64 << 10;
  const Outcome shared = allreduce_on(3, small);
  const Outcome sockets = allreduce_on(3, sockets_only());
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(shared.shared_links[r], 2u) << "rank " << r << ": both its ring neighbours";
    EXPECT_EQ(sockets.shared_links[r], 0u);
    EXPECT_EQ(shared.sums[r], sockets.sums[r]) << "rank " << r;
  }
}

// A file-size limit makes posix_fallocate refuse the segment as a full
// /dev/shm would (EFBIG rather than ENOSPC): two members, three groups, so
// the lower one fails to make a segment three times and says so once.
TEST(SharedLinks, WithoutRoomInDevShmTheLinksKeepTheirSocketsWithOneWarning) {
  const gossipd::testing::TinyFileSizeLimit limit;
  ASSERT_TRUE(limit.ok());
  gossipd::testing::CapturedLog log;
  TestCluster cluster(2);
  std::vector<std::vector<float>> sums(2);
  std::vector<size_t> shared(2);
  const auto errors = cluster.run([&](size_t r) {
    for (uint32_t tag = kLinkTag; tag < kLinkTag + 3; ++tag) {
      Group g(cluster.node(r), tag, cluster.ids());
      sums[r] = rank_input(r, 1000);
      AllreduceRing(g, sums[r]).run();
      AllreduceRing(g, sums[r]).run();
      shared[r] += g.wire()->shared_links();
    }
  });
  testing::expect_no_errors(errors);
  EXPECT_EQ(shared, (std::vector<size_t>{0, 0}));
  EXPECT_EQ(sums[0], sums[1]);
  EXPECT_EQ(log.count("no shared memory for members on this host"), 1u);
}

// One end of a socketpair is a link that may share; the test writes frames.
class OfferedLink : public ::testing::Test {
 protected:
  OfferedLink() : link_("peer", 1 << 20, kLinkTag) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    peer_ = Fd(sv[0]);
    link_.attach(Fd(sv[1]));
    link_.allow_shared(true);
  }
  void write_frame(wire::FrameKind kind, const std::vector<std::byte>& payload) {
    wire::FrameHeader h;
    h.kind = kind;
    h.dtype = proto::DTYPE_UINT8;
    h.tag = kLinkTag;
    h.bytes = payload.size();
    std::vector<std::byte> bytes(wire::kFrameHeaderBytes);
    const auto header = wire::encode(h);
    std::memcpy(bytes.data(), header.data(), header.size());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    ASSERT_EQ(::send(peer_.get(), bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    link_.read_available();
  }
  static std::vector<std::byte> offer(uint64_t capacity, const std::string& name) {
    std::vector<std::byte> p(sizeof(capacity) + name.size());
    std::memcpy(p.data(), &capacity, sizeof(capacity));
    std::memcpy(p.data() + sizeof(capacity), name.data(), name.size());
    return p;
  }
  DataLink link_;
  Fd peer_;
};

TEST_F(OfferedLink, ANameNotOursIsDeclinedAndCountedTheLinkGoesOn) {
  write_frame(wire::FrameKind::kShmOffer, offer(1 << 20, "/../../etc/passwd"));
  EXPECT_FALSE(link_.broken());
  EXPECT_FALSE(link_.reads_shared());
  const auto notes = link_.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].reason, RejectReason::kBadBody);
  EXPECT_NE(notes[0].detail.find("not one of ours"), std::string::npos) << notes[0].detail;
  EXPECT_TRUE(link_.wants_write()) << "the refusal is queued for the peer";
}

TEST_F(OfferedLink, PipesOfAnImpossibleSizeAreDeclinedAndCounted) {
  write_frame(wire::FrameKind::kShmOffer,
              offer(uint64_t{1} << 40, "/gossipd-1-0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(link_.broken());
  const auto notes = link_.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].reason, RejectReason::kBadBody);
}

TEST_F(OfferedLink, ASwitchNobodyAgreedToBreaksTheLinkAsUnexpected) {
  write_frame(wire::FrameKind::kShmSwitch, {});
  EXPECT_TRUE(link_.broken());
  EXPECT_TRUE(link_.failure().rejected);
  EXPECT_EQ(link_.failure().reason, RejectReason::kUnexpected);
}

TEST_F(OfferedLink, ARefusalOfNoOfferBreaksTheLinkAsUnexpected) {
  write_frame(wire::FrameKind::kShmRefuse, {});
  EXPECT_TRUE(link_.broken());
  EXPECT_EQ(link_.failure().reason, RejectReason::kUnexpected);
}

// The offering side reads the other's switch and, before its own switch
// is on the socket, frees room the other waits for: its doorbell must not
// go into the socket's frame stream (the other still parses frames there).
TEST(SharedLinks, NoDoorbellGoesOnASocketThatStillCarriesFrames) {
  constexpr size_t kPipe = 4096, kBig = 3 * kPipe;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  DataLink offering("c", 1 << 20, kLinkTag), taking("o", 1 << 20, kLinkTag);
  offering.attach(Fd(sv[0]));
  taking.attach(Fd(sv[1]));
  taking.allow_shared(true);
  offering.offer_shared(ShmMapping::create(DataLink::shared_bytes(kPipe)), kPipe);
  const auto now = DataLink::Clock::now();
  ASSERT_TRUE(offering.flush(now));
  ASSERT_TRUE(taking.read_available());  // maps the segment, queues its switch
  std::vector<std::byte> big(kBig);
  for (size_t i = 0; i < kBig; ++i) big[i] = static_cast<std::byte>(i * 7);
  wire::FrameHeader h;
  h.kind = wire::FrameKind::kTensor;
  h.dtype = proto::DTYPE_UINT8;
  h.tag = kLinkTag;
  h.seq = 5;
  h.bytes = kBig;
  taking.queue(h, big.data(), nullptr, DataLink::Clock::time_point::min());
  ASSERT_TRUE(taking.flush(now));  // the switch on the socket, then the pipe full
  ASSERT_TRUE(taking.writes_shared());
  ASSERT_TRUE(taking.prepare_sleep()) << "a full pipe: the writer sleeps";
  ASSERT_TRUE(offering.read_available());  // the switch, then room freed while the writer sleeps
  taking.woke();
  std::optional<InFrame> got;
  const auto any = [](const wire::FrameHeader&) { return true; };
  const auto none = [](const wire::FrameHeader&) { return false; };
  for (int k = 0; k < 100 && !got; ++k) {
    ASSERT_TRUE(offering.flush(now));
    ASSERT_TRUE(taking.read_available()) << taking.failure().detail;
    ASSERT_TRUE(taking.flush(now));
    ASSERT_TRUE(offering.read_available()) << offering.failure().detail;
    got = offering.take(any, none, [](const wire::FrameHeader&) {});
  }
  ASSERT_TRUE(got);
  EXPECT_TRUE(taking.reads_shared() && offering.reads_shared() && offering.writes_shared());
  EXPECT_EQ(std::memcmp(got->payload.data(), big.data(), kBig), 0);
}

// A maker killed before its peer opened the segment leaves the name; the
// next segment made on this host sweeps it (here: the sweep itself).
TEST(ShmNames, ANameWhoseMakerDiedIsSweptAndALivingOnesIsKept) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const std::string dead = "/gossipd-" + std::to_string(child) + "-0123456789abcdef0123456789abcdef";
  const int fd = ::shm_open(dead.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ::close(fd);
  const auto alive = ShmMapping::create(4096);
  ShmMapping::sweep_orphans();
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + dead)) << "the dead maker's name was left";
  EXPECT_TRUE(std::filesystem::exists("/dev/shm" + alive->name())) << "a living maker's name was taken";
  ::shm_unlink(dead.c_str());
}

}  // namespace
}  // namespace gossipd::protocol
