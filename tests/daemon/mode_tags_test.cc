// The modes' collective tags: each mode that asks gets a range of its own,
// laid out by the registry (ModeSet) in the modes' block of the allocator
// (protocol/wire/tags.h), so that no list outside a mode names it.
#include <gtest/gtest.h>

#include <stdexcept>

#include "daemon/worker/mode_set.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
namespace {

namespace tags = protocol::tags;

// A mode as a test adds one: it asks for `count` tags and does nothing else.
class Asking : public Mode {
 public:
  Asking(std::string name, uint32_t count) : name_(std::move(name)), count_(count) {}
  std::string name() const override { return name_; }
  std::string summary() const override { return "a test's mode that asks for tags"; }
  uint32_t tag_count() const override { return count_; }
  std::unique_ptr<Worker> make_worker(WorkerContext&) const override { return nullptr; }

 private:
  std::string name_;
  uint32_t count_;
};

std::vector<const Mode*> asking(const ModeSet& modes) {
  std::vector<const Mode*> out;
  for (const auto& m : modes.all())
    if (m->tag_count() > 0) out.push_back(m.get());
  return out;
}

void expect_disjoint_in_block(const ModeSet& modes) {
  const tags::Range block = tags::range(tags::User::kModes);
  const auto ask = asking(modes);
  for (size_t i = 0; i < ask.size(); ++i) {
    const tags::Range r = ask[i]->tags();
    EXPECT_GE(r.count, ask[i]->tag_count()) << ask[i]->name();
    EXPECT_TRUE(block.contains(r.first) && block.contains(r.first + r.count - 1)) << ask[i]->name();
    for (size_t j = i + 1; j < ask.size(); ++j)
      EXPECT_FALSE(r.meets(ask[j]->tags())) << ask[i]->name() << " and " << ask[j]->name();
    for (size_t u = 0; u < static_cast<size_t>(tags::User::kCount); ++u) {
      if (static_cast<tags::User>(u) == tags::User::kModes) continue;
      EXPECT_FALSE(r.meets(tags::range(static_cast<tags::User>(u)))) << ask[i]->name() << " and user " << u;
    }
  }
}

TEST(ModeTags, EveryRegisteredModeThatAsksHasARangeOfItsOwnInTheModesBlock) {
  const ModeSet modes;
  EXPECT_GE(asking(modes).size(), 4u) << "the grid, the pipeline, the sparse rows and the compute groups ask";
  expect_disjoint_in_block(modes);
  // Every process runs the same registry: a second set lays them out alike.
  const ModeSet again;
  for (const auto& m : modes.all()) {
    EXPECT_EQ(again.find(m->name()).tags().first, m->tags().first) << m->name();
    EXPECT_EQ(again.find(m->name()).tags().count, m->tags().count) << m->name();
  }
}

TEST(ModeTags, AModeAddedGetsItsOwnTooAndOneThatDoesNotFitIsRefused) {
  std::vector<std::unique_ptr<Mode>> all = registered_modes();
  all.push_back(std::make_unique<Asking>("odd", 5));  // rounded up to 8
  all.push_back(std::make_unique<Asking>("wide", 1u << 24));
  const ModeSet modes(std::move(all));
  EXPECT_EQ(modes.find("odd").tags().count, 8u);
  expect_disjoint_in_block(modes);

  std::vector<std::unique_ptr<Mode>> hungry = registered_modes();
  hungry.push_back(std::make_unique<Asking>("hungry", tags::range(tags::User::kModes).count));
  try {
    ModeSet refused(std::move(hungry));
    FAIL() << "a mode asking for the whole block beside the others was given tags";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("hungry"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gossipd::daemon
