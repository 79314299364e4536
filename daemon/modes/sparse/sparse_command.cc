#include "daemon/modes/sparse/sparse_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "daemon/config/cli.h"
#include "daemon/config/train_flags.h"
#include "daemon/modes/sparse/net/challenge_files.h"
#include "daemon/modes/sparse/net/fashion_inputs.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/net/sparse_infer.h"
#include "trainer/dataset.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;
namespace sp = trainer::sparse;

int run_generate(const SparseGenerateOptions& o) {
  const fs::path dir = o.out;
  const fs::path first = sp::layer_file(dir, o.neurons, 1);
  if (!o.force && (fs::exists(first) || fs::exists(sp::inputs_file(dir, o.neurons))))
    throw UsageError("sparse generate: " + dir.string() + " already holds a network of " +
                     std::to_string(o.neurons) + " neurons; pass --force to replace it, or another --out");
  sp::SparseNet net;
  try {
    net = sp::make_radix_net(o.neurons, o.layers);
    if (o.shuffle != 0) net = sp::shuffle_neurons(net, o.shuffle);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("sparse generate: --neurons: ") + e.what());
  }
  TrainFlags f;
  f.data = o.data;
  const trainer::Dataset images = trainer::load_fashion_mnist(data_dir(f), trainer::Split::kTrain);
  const sp::SparseInputs inputs = sp::inputs_from_images(images, o.neurons, o.inputs);
  sp::write_network(dir, net);
  sp::write_inputs(dir, inputs);
  std::printf(
      "gossipctl sparse generate: %u neurons x %u layers (%zu edges, bias %.2f) in %s, %zu inputs "
      "(%.1f nonzeros each) in %s\n",
      o.neurons, o.layers, net.edges(), sp::challenge_bias(o.neurons),
      sp::layer_file(dir, o.neurons, 1).parent_path().c_str(), inputs.count(),
      static_cast<double>(inputs.nonzeros()) / std::max<size_t>(inputs.count(), 1),
      sp::inputs_file(dir, o.neurons).c_str());
  return kExitOk;
}

// The categories against the file of record: compared when it exists (never
// overwritten), written when it does not.
std::string settle_categories(const fs::path& file, const sp::InferResult& r, size_t samples,
                              bool all_inputs) {
  if (!fs::exists(file)) {
    if (!all_inputs) return "not written (--inputs takes part of the inputs)";
    sp::write_categories(file, r.categories);
    return "written to " + file.string();
  }
  std::vector<uint32_t> truth = sp::read_categories(file, SIZE_MAX);
  std::erase_if(truth, [&](uint32_t s) { return s >= samples; });
  if (truth != r.categories) {
    throw UsageError("sparse infer: the categories differ from " + file.string() + " (" +
                     std::to_string(r.categories.size()) + " here, " + std::to_string(truth.size()) +
                     " there): a network or inputs other than the file's?");
  }
  return "the same as " + file.string();
}

int run_infer(const SparseInferOptions& o) {
  const uint32_t n = challenge_width(o.dir, o.neurons, "sparse infer");
  const uint32_t layers = challenge_layers(o.dir, n, o.layers, "sparse infer");
  const sp::SparseNet net = sp::read_network(o.dir, n, layers, sp::challenge_bias(n));
  const sp::SparseInputs all = sp::read_inputs(o.dir, n);
  const sp::SparseInputs inputs = o.inputs != 0 ? all.head(o.inputs) : all;
  const sp::InferResult r = sp::infer(net, inputs);
  const fs::path file = o.categories.empty() ? sp::categories_file(o.dir, n, layers) : fs::path(o.categories);
  const std::string verdict = settle_categories(file, r, inputs.count(), inputs.count() == all.count());
  const double edges = static_cast<double>(inputs.count()) * static_cast<double>(net.edges());
  std::printf(
      "gossipctl sparse infer: %u neurons x %u layers, %zu inputs, %.3f s, %.4g edges/s, "
      "%zu categories (%s)\n",
      n, layers, inputs.count(), r.seconds, edges / r.seconds, r.categories.size(), verdict.c_str());
  if (o.print_categories)
    for (uint32_t c : r.categories) std::printf("%u\n", c + 1);
  return kExitOk;
}

}  // namespace

uint32_t challenge_width(const std::string& dir, uint32_t neurons, const std::string& who) {
  if (neurons != 0) return neurons;
  const std::vector<uint32_t> widths = sp::network_widths(dir);
  if (widths.size() == 1) return widths[0];
  if (widths.empty())
    throw UsageError(who + ": " + dir + " has no neuronN directory (make one: gossipctl sparse generate)");
  throw UsageError(who + ": " + dir + " holds networks of several widths; pick one with --neurons");
}

uint32_t challenge_layers(const std::string& dir, uint32_t neurons, uint32_t layers, const std::string& who) {
  if (layers != 0) return layers;
  layers = sp::count_layers(dir, neurons);
  if (layers == 0) throw UsageError(who + ": no layer file " + sp::layer_file(dir, neurons, 1).string());
  return layers;
}

CLI::App* add_sparse_commands(CLI::App& app, SparseGenerateOptions& g, SparseInferOptions& i) {
  CLI::App* sparse = app.add_subcommand("sparse", "Sparse networks: the Sparse DNN Graph Challenge's");
  sparse->require_subcommand(1);
  CLI::App* gen = sparse->add_subcommand(
      "generate",
      "Write a RadiX-Net (32 edges per neuron) and inputs from Fashion-MNIST as the challenge's files");
  gen->add_option("--neurons", g.neurons, "Neurons per layer N (a power of 4: 64 .. 65536)")
      ->required()
      ->check(CLI::IsMember({64, 256, 1024, 4096, 16384, 65536}));
  gen->add_option("--layers", g.layers, "Layers L")->required()->check(CLI::Range(1, 100000));
  gen->add_option("--out", g.out, "Directory to write the files in (created if missing)")->required();
  gen->add_option("--data", g.data, "Fashion-MNIST directory (default: the Debian package's)");
  gen->add_option("--inputs", g.inputs, "Images made into inputs (the training split has 60000)")
      ->check(CLI::Range(size_t{1}, size_t{60000}))
      ->capture_default_str();
  gen->add_option("--shuffle", g.shuffle,
                  "Renumber every layer's neurons with this seed (the same categories, its structure hidden)")
      ->capture_default_str();
  gen->add_flag("--force", g.force, "Replace the files of a network of the same width in --out");

  CLI::App* inf = sparse->add_subcommand(
      "infer", "The serial reference inference: categories and the challenge's edges/s (one thread)");
  inf->add_option("dir", i.dir, "Directory with the challenge's files")->required();
  inf->add_option("--neurons", i.neurons, "Network width N (default: the only neuronN directory)");
  inf->add_option("--layers", i.layers, "Layers to run (default: every layer file)");
  inf->add_option("--inputs", i.inputs, "Run the first K inputs only (default: all)");
  inf->add_option("--categories", i.categories,
                  "Categories file: compared when it exists, written when not (default: "
                  "DIR/neuronN-lL-categories.tsv)");
  inf->add_flag("--print-categories", i.print_categories, "Print the categories, one per line (1-based)");
  return sparse;
}

int run_sparse_command(const CLI::App& sparse, const SparseGenerateOptions& g, const SparseInferOptions& i) {
  if (sparse.get_subcommand("generate")->parsed()) return run_generate(g);
  return run_infer(i);
}

}  // namespace gossipd::daemon
