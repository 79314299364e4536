// compare's hosts and links as values: the send buffer a link rate asks
// for, the failure timeout a loaded machine needs, the netns tools found on
// PATH (the hosts themselves: CompareTest.NetnsHosts..., compare_test.cc).
#include "daemon/ctl/compare_hosts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare_args.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

namespace fs = std::filesystem;

// ~5 ms of the link rate, within gossipd run's --send-buffer-kb limits.
TEST(LinkSendBuffer, HoldsFiveMillisecondsOfTheRate) {
  EXPECT_EQ(daemon::link_send_buffer_kb("100mbit"), 62);    // 62,500 bytes
  EXPECT_EQ(daemon::link_send_buffer_kb("12500kbps"), 62);  // bytes per second: the same rate
  EXPECT_EQ(daemon::link_send_buffer_kb("1gbit"), 611);
  EXPECT_EQ(daemon::link_send_buffer_kb("2.5mbit"), 4);  // 1,563 bytes: raised to the floor
  EXPECT_EQ(daemon::link_send_buffer_kb("40gbit"), 4096);
  EXPECT_THROW(daemon::link_send_buffer_kb("fast"), daemon::UsageError);
}

// Past 4 workers a core compare's workers wait longer before they evict
// (or judge themselves cut off): 3 s x workers / (4 x cores).
TEST(LoadFailureTimeout, GrowsWithTheWorkersPastFourACore) {
  using V = std::vector<std::string>;
  EXPECT_EQ(daemon::load_failure_timeout_args(8, 2), V{});
  EXPECT_EQ(daemon::load_failure_timeout_args(16, 2), (V{"--failure-timeout-ms", "6000"}));
  EXPECT_EQ(daemon::load_failure_timeout_args(64, 2), (V{"--failure-timeout-ms", "24000"}));
  EXPECT_EQ(daemon::load_failure_timeout_args(64, 16), V{});
  EXPECT_EQ(daemon::load_failure_timeout_args(8, 0), (V{"--failure-timeout-ms", "6000"}));  // unknown: 1
}

// --netns runs iproute2's ip and tc by the absolute path found on PATH (or
// in the sbin directories), not a path fixed at build time.
TEST(NetnsTools, FindProgramReturnsAnAbsolutePathOrNothing) {
  const std::string sh = daemon::find_program("sh");
  ASSERT_FALSE(sh.empty()) << "sh is on every PATH";
  EXPECT_EQ(sh.front(), '/') << sh;
  EXPECT_EQ(fs::path(sh).filename(), "sh") << sh;
  EXPECT_EQ(::access(sh.c_str(), X_OK), 0) << sh;
  EXPECT_EQ(daemon::find_program("gossipd-no-such-program"), "");
  EXPECT_EQ(daemon::find_program(""), "");
  EXPECT_EQ(daemon::find_program("bin/sh"), "") << "a name, not a path";
}

TEST(NetnsTools, FindProgramInTakesTheFirstExecutableInOrder) {
  TempDir a("gossipd_find_a"), b("gossipd_find_b");
  for (const auto* dir : {&a, &b}) std::ofstream(dir->file("tool")) << "#!/bin/sh\n";
  fs::permissions(b.file("tool"), fs::perms::owner_exec, fs::perm_options::add);
  // a's tool is not executable: skipped, as a shell skips it.
  EXPECT_EQ(daemon::find_program_in("tool", "/nonexistent::" + a.path() + ":" + b.path()), b.file("tool"));
  EXPECT_EQ(daemon::find_program_in("tool", a.path()), "");
  fs::create_directory(b.file("dir"));
  EXPECT_EQ(daemon::find_program_in("dir", b.path()), "") << "a directory is not a program";
}

// A missing tool fails --netns with one line naming it and what to install
// (checked before any namespace exists; building the line needs no root).
TEST(NetnsTools, AMissingToolIsNamedInOneLine) {
  const std::string tc = daemon::missing_netns_tool_message({"tc"});
  EXPECT_NE(tc.find("--netns needs tc from iproute2"), std::string::npos) << tc;
  EXPECT_NE(tc.find("install iproute2"), std::string::npos) << tc;
  EXPECT_EQ(tc.find('\n'), std::string::npos) << tc;
  const std::string both = daemon::missing_netns_tool_message({"ip", "tc"});
  EXPECT_NE(both.find("--netns needs ip and tc from iproute2"), std::string::npos) << both;
}

}  // namespace
}  // namespace gossipd::testing
