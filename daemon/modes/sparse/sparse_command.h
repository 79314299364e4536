#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipctl sparse generate: a RadiX-Net and inputs made from
// Fashion-MNIST, written as the Sparse DNN Graph Challenge's files.
struct SparseGenerateOptions {
  uint32_t neurons = 1024;
  uint32_t layers = 120;
  std::string out;
  std::string data;       // Fashion-MNIST directory; empty: the Debian package's
  size_t inputs = 60000;  // the challenge's count (the training split's images)
  uint64_t shuffle = 0;   // renumber every layer's neurons with this seed; 0: no
  bool force = false;     // replace files that exist
};

// gossipctl sparse infer: the serial reference inference on such files.
struct SparseInferOptions {
  std::string dir;
  uint32_t neurons = 0;    // 0: the only neuronN directory in dir
  uint32_t layers = 0;     // 0: every layer file there
  size_t inputs = 0;       // 0: all
  std::string categories;  // empty: DIR/neuronN-lL-categories.tsv
  bool print_categories = false;
};

// The network in `dir` a sparse command runs: its width (`neurons`, or
// when 0 the only neuronN directory there) and depth (`layers`, or when 0
// every layer file in a row). UsageError "WHO: ..." when there is none or
// the width is ambiguous.
uint32_t challenge_width(const std::string& dir, uint32_t neurons, const std::string& who);
uint32_t challenge_layers(const std::string& dir, uint32_t neurons, uint32_t layers, const std::string& who);

// Adds `sparse` and its two commands to gossipctl; returns `sparse`.
CLI::App* add_sparse_commands(CLI::App& app, SparseGenerateOptions& g, SparseInferOptions& i);
// Runs the one of them that was parsed.
int run_sparse_command(const CLI::App& sparse, const SparseGenerateOptions& g, const SparseInferOptions& i);

}  // namespace gossipd::daemon
