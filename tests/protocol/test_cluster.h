#pragma once

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "protocol/transport/node.h"
#include "tests/support/wait.h"
#include "topology/view.h"

namespace gossipd::protocol::testing {

// n Nodes on the real ZeroMQ loopback transport (tcp://127.0.0.1, port 0),
// all connected to each other, with ranks run as threads.
class TestCluster {
 public:
  // (base by reference, the defaults one static: GCC 12 raised a false
  // -Wmaybe-uninitialized for a NodeOptions{} temporary inlined at every caller)
  explicit TestCluster(size_t n) : TestCluster(n, default_options()) {}
  TestCluster(size_t n, const NodeOptions& base)
      : TestCluster(n, [&](size_t, NodeOptions& o) { o = base; }) {}
  // Node i's options as `options(i, o)` leaves them (a slow member among fast ones).
  TestCluster(size_t n, const std::function<void(size_t, NodeOptions&)>& options) {
    for (size_t i = 0; i < n; ++i) {
      NodeOptions o;
      options(i, o);
      // snprintf + move: GCC 12 raises a -Wrestrict false positive (PR 105329)
      // for string concatenation inlined here.
      char id[32];
      std::snprintf(id, sizeof(id), "n%zu", i);
      o.id = std::string(id);
      o.listen = "tcp://127.0.0.1:0";
      nodes_.push_back(std::make_unique<Node>(o));
    }
    for (auto& a : nodes_) {
      for (auto& b : nodes_) {
        if (a != b) a->add_peer(b->id(), b->endpoint());
      }
    }
  }

  static const NodeOptions& default_options() {
    static const NodeOptions options;
    return options;
  }

  Node& node(size_t i) { return *nodes_.at(i); }
  size_t size() const { return nodes_.size(); }
  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const auto& n : nodes_) out.push_back(n->id());
    return out;
  }

  // Runs fn(rank) on one thread per rank and joins them all (also when some
  // throw); returns each rank's exception or nullptr.
  std::vector<std::exception_ptr> run(const std::function<void(size_t)>& fn, size_t ranks = 0) {
    if (ranks == 0) ranks = nodes_.size();
    std::vector<std::exception_ptr> errors(ranks);
    {
      std::vector<std::jthread> threads;
      for (size_t r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
          try {
            fn(r);
          } catch (...) {
            errors[r] = std::current_exception();
          }
        });
      }
    }
    return errors;
  }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
};

// Rethrows the first error, so gtest shows its message.
inline void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

using gossipd::testing::wait_until;

// Hierarchical Crossover-SGD's groups in the protocol tests: the view's even
// and odd ranks.
inline std::map<std::string, std::string> parity_groups(const topology::View& view) {
  std::map<std::string, std::string> labels;
  for (size_t r = 0; r < view.size(); ++r) labels[view.member(r)] = r % 2 ? "odd" : "even";
  return labels;
}

}  // namespace gossipd::protocol::testing
