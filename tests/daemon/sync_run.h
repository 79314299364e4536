#pragma once

// What the multi-process tests of the synchronous modes (grid, pipeline)
// share: argument lists, the serial run to compare with, a refused start,
// and the "done" lines of processes that hold one model between them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace gossipd::testing {

inline std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// `gossipd train` with `flags`: its final test accuracy.
inline double serial_test_accuracy(const std::vector<std::string>& flags) {
  const RunResult r = run(with({bin("gossipd"), "train"}, flags), std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, m, std::regex("test_acc ([0-9.]+)"))) << r.out;
  return m.empty() ? -1 : std::stod(m[1]);
}

// A member of `members` (peers that are never reached) started with `extra`.
inline void expect_refused_by(int members, const std::vector<std::string>& extra, const std::string& needle) {
  std::string peers;
  for (int i = 1; i < members; ++i) {
    // append, not +: GCC 12 raises a -Wrestrict false positive (PR 105329) for the concatenation.
    peers.append(i > 1 ? ",w" : "w").append(std::to_string(i)).append("=tcp://127.0.0.1:9");
  }
  const RunResult r = run(with({bin("gossipd"), "run", "--id", "w0", "--listen", "tcp://127.0.0.1:0",
                                "--peers", peers, "--quiet"},
                               extra),
                          std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

// Every process's "done" line: the rounds, the accuracy, the parameter
// hash; fails unless all finished cleanly with the same model.
struct Done {
  int rounds = -1;
  double accuracy = -1;
  std::string hash;
};
inline Done expect_identical_cells(Cluster& c, std::chrono::seconds timeout, std::vector<int> cells = {}) {
  if (cells.empty()) {
    for (int i = 0; i < c.size(); ++i) cells.push_back(i);
  }
  std::set<std::string> hashes;
  Done done;
  for (int i : cells) {
    EXPECT_TRUE(c.proc(i).wait(timeout)) << "process " << i << " did not finish";
    EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    if (!end || end->event() != "done") {
      ADD_FAILURE() << "process " << i << " wrote no done record: " << c.proc(i).out();
      continue;
    }
    done = {static_cast<int>(end->round()), end->status().test_accuracy(), end->param_hash()};
    hashes.insert(end->param_hash());
  }
  if (hashes.size() != 1) {
    std::string logs;
    for (int i : cells)
      logs.append("\n--- process ").append(std::to_string(i)).append(":\n").append(c.proc(i).err());
    ADD_FAILURE() << "the processes assembled different models (" << hashes.size()
                  << " hashes); their logs:" << logs;
  }
  return done;
}

// The round of the newest checkpoint in `dir`, 0 for none.
inline uint64_t newest_round(const std::string& dir) {
  const auto all = daemon::list_checkpoints(dir);
  return all.empty() ? 0 : daemon::read_checkpoint(all[0]).state.header.step();
}

// Waits until every process of `c` has trained `rounds` rounds.
inline void wait_for_rounds(Cluster& c, double rounds) {
  for (int i = 0; i < c.size(); ++i) {
    const uint16_t port = c.http_port(i);
    ASSERT_GT(port, 0) << c.proc(i).err();
    ASSERT_TRUE(
        wait_until([&] { return fetch_metrics(port).value("gossipd_rounds_total").value_or(0) >= rounds; },
                   std::chrono::seconds(60)));
  }
}

// Each of `procs` stops within `within`, exit 1, its error containing `needle`.
inline void expect_stopped_naming(Cluster& c, const std::vector<int>& procs, std::chrono::seconds within,
                                  const std::string& needle) {
  for (int i : procs) {
    ASSERT_TRUE(c.proc(i).wait(within)) << "process " << i << " hangs";
    EXPECT_EQ(c.proc(i).exit_code(), 1) << c.proc(i).err();
    EXPECT_NE(c.proc(i).err().find(needle), std::string::npos) << c.proc(i).err();
  }
}

}  // namespace gossipd::testing
