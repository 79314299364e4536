// Hierarchical Crossover-SGD's share under --robust clip (ShareBound): each
// owner's change to its segments since the group's robust mean is clipped
// at every member to half the lower median of the members' radii, carried
// in the share beside the parameters (and undone where most members named
// the owner), over the real
// ZeroMQ loopback transport, ranks as threads.
#include "protocol/gossip/share_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "protocol/gossip/group_averages.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol::share {
namespace {

using testing::TestCluster;

const SegmentTable kTable{{0, 100}, {100, 100}, {200, 100}, {300, 100}};
constexpr size_t kMembers = 4, kValues = 400;

double change(std::span<const float> x, std::span<const float> from, const SegmentRange& s) {
  return ClippedGossip::distance(from.subspan(s.offset, s.length), 1.0, x.subspan(s.offset, s.length), 1.0);
}

// Four members, fixed radii 1, 2, 3 and `lying` (member 3's); segment s is
// owned by member s; members below `voters` have named member 3. Member 3
// moves its segment by 100, member 0 its own by 0.4: every member clips the
// first to half the lower median radius (`radius`), as far as an honest mix
// at that radius moves a segment, or undoes it where most members voted,
// and leaves the second; all end with the same bits, and member 3's change
// counts as clipped in its record at the others.
// With `everyone`, every member has named every other: no vote counts.
void run_with(double lying, double radius, size_t voters = 0, bool everyone = false) {
  const bool undone = 2 * voters > kMembers && !everyone;
  TestCluster cluster(kMembers);
  const std::vector<double> taus{1, 2, 3, lying};
  std::vector<std::vector<float>> out(kMembers);
  std::vector<std::map<std::string, PeerClipping>> seen(kMembers);
  std::vector<float> start(kValues);
  for (size_t i = 0; i < kValues; ++i) start[i] = std::sin(0.1f * float(i));
  std::vector<std::string> owners;
  for (size_t r = 0; r < kMembers; ++r) owners.push_back(cluster.node(r).id());
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 13, cluster.ids(), testing::small_pieces());
    ClipSpec spec;
    spec.tau = taus[r];
    ClippedGossip judge(spec);
    ShareBound bound;
    out[r] = start;
    bound.begin(g, kTable, out[r], judge, owners,
                [&](const std::string& m) { return everyone || (r < voters && m == owners[3]); });
    // Each owner's change to its own segment, then the share: every member
    // takes each segment as its owner left it, the radii summed beside.
    const SegmentRange own = kTable[r];
    if (r == 3)
      for (size_t i = own.offset; i < own.offset + own.length; ++i) out[r][i] += 10.0f;  // 10 x sqrt(100)
    if (r == 0)
      for (size_t i = own.offset; i < own.offset + own.length; ++i) out[r][i] += 0.04f;  // 0.4
    GroupAverages averages(CodecSpec{});
    averages.share(g, out[r], {{own.offset, own.offset + own.length}}, 1, bound.slots());
    const size_t clipped = bound.clip(g, kTable, owners, out[r], judge);
    EXPECT_EQ(clipped, 1u) << "member " << r;
    std::vector<double> bounds(kTable.size(), 0.5 * radius);
    if (undone) bounds[3] = 0;
    EXPECT_EQ(bound.bounds(), bounds) << "member " << r;
    static_cast<void>(judge.end_round());
    seen[r] = judge.peers();
  }));
  for (size_t r = 1; r < kMembers; ++r) EXPECT_EQ(out[r], out[0]) << "member " << r;
  EXPECT_NEAR(change(out[0], start, kTable[3]), undone ? 0 : 0.5 * radius, 1e-4);
  EXPECT_NEAR(change(out[0], start, kTable[0]), 0.4, 1e-4);
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(seen[r].at(owners[3]).clipped, 1u) << "member " << r;
  EXPECT_EQ(seen[1].at(owners[0]).clipped, 0u);
}

TEST(ShareBound, AByzantineOwnersChangeIsClippedToTheLowerMedianRadiusAtEveryMemberAlike) {
  run_with(1000, 2);
}

TEST(ShareBound, AMemberThatWritesATinyRadiusLowersItToTheSmallestHonestOneAtMost) { run_with(0.001, 1); }

TEST(ShareBound, AnOwnerNamedByMostOfTheGroupHasItsChangeUndoneAtEveryMemberAlike) { run_with(1000, 2, 3); }

// Two votes of four are not most: the owner is clipped as before, and the
// voters' radii (carried negated) still make the bound.
TEST(ShareBound, HalfTheGroupsVotesUndoNothingAndKeepTheirRadii) { run_with(1000, 2, 2); }

// Half a group Byzantine: CenteredClip has no majority and its members
// name one another. Undoing every owner would cut the group off from the
// others; the votes of members that most named count for nothing, and the
// owners are clipped as without votes.
TEST(ShareBound, MembersThatMostNamedCastNoVote) { run_with(1000, 2, 0, true); }

}  // namespace
}  // namespace gossipd::protocol::share
