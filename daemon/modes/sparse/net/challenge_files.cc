#include "daemon/modes/sparse/net/challenge_files.h"

#include <charconv>
#include <regex>
#include <string>

#include "daemon/modes/sparse/net/tsv_lines.h"
#include "trainer/durable_file.h"
#include "trainer/errors.h"

namespace gossipd::trainer::sparse {
namespace {

std::string n_str(uint32_t n) { return std::to_string(n); }

// More samples than any dataset here (the challenge has 60000): a bound, so
// that a sample number of 4 billion is an error and not 16 GB of offsets
// (the fuzzer found that one).
constexpr uint32_t kMaxSamples = 10'000'000;

// Appends "a<TAB>b<TAB>value\n" (1-based a, b) without iostreams: a network
// of 65536 neurons and 1920 layers has 4 billion lines.
void append_line(std::string& out, uint32_t a, uint32_t b, float value) {
  char num[32];
  const auto put = [&](auto v, char end) {
    out.append(num, std::to_chars(num, num + sizeof num, v).ptr);
    out.push_back(end);
  };
  put(a + 1, '\t');
  put(b + 1, '\t');
  put(value, '\n');  // the shortest text that reads back the same float
}

void write_text(const fs::path& file, const std::string& text) {
  std::error_code ec;
  if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
  if (ec) throw DataError("cannot create " + file.parent_path().string() + ": " + ec.message());
  write_file_durably(file, text);
}

}  // namespace

// Names built by appending: GCC 12 warns falsely (-Wrestrict) on
// "literal" + std::string here.
fs::path layer_file(const fs::path& dir, uint32_t neurons, uint32_t layer) {
  std::string name = "n";
  name += n_str(neurons);
  name += "-l";
  name += n_str(layer);
  name += ".tsv";
  return dir / ("neuron" + n_str(neurons)) / name;
}

fs::path inputs_file(const fs::path& dir, uint32_t neurons) {
  return dir / ("sparse-images-" + n_str(neurons) + ".tsv");
}

fs::path categories_file(const fs::path& dir, uint32_t neurons, uint32_t layers) {
  return dir / ("neuron" + n_str(neurons) + "-l" + n_str(layers) + "-categories.tsv");
}

std::vector<uint32_t> network_widths(const fs::path& dir) {
  static const std::regex name(R"(neuron([0-9]{1,9}))");
  std::vector<uint32_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string f = e.path().filename().string();
    if (e.is_directory(ec) && std::regex_match(f, m, name))
      out.push_back(static_cast<uint32_t>(std::stoul(m[1])));
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint32_t count_layers(const fs::path& dir, uint32_t neurons) {
  uint32_t l = 0;
  std::error_code ec;
  while (fs::is_regular_file(layer_file(dir, neurons, l + 1), ec)) ++l;
  return l;
}

SparseLayer read_layer(TsvLines& lines, uint32_t neurons, float bias) {
  std::vector<Edge> edges;
  edges.reserve(static_cast<size_t>(neurons) * 32);
  Edge e;
  uint32_t largest = 0;
  while (lines.next_triple(e.from, e.to, e.weight, neurons, neurons)) {
    edges.push_back(e);
    largest = std::max({largest, e.from + 1, e.to + 1});
  }
  if (largest != neurons) {
    throw DataError(lines.name() + ": its largest neuron is " + n_str(largest) + ", the network has " +
                    n_str(neurons) + " (a layer of another network? check --neurons and the file)");
  }
  return layer_from_edges(neurons, std::move(edges), bias, lines.name());
}

SparseNet read_network(const fs::path& dir, uint32_t neurons, uint32_t layers, float bias) {
  SparseNet net;
  net.neurons = neurons;
  for (uint32_t l = 1; l <= layers; ++l) {
    TsvLines lines(layer_file(dir, neurons, l));
    net.layers.push_back(read_layer(lines, neurons, bias));
  }
  return net;
}

SparseInputs read_inputs(const fs::path& dir, uint32_t neurons) {
  TsvLines lines(inputs_file(dir, neurons));
  return read_inputs(lines, neurons);
}

SparseInputs read_inputs(TsvLines& lines, uint32_t neurons) {
  SparseInputs in;
  in.neurons = neurons;
  uint32_t sample = 0, neuron = 0;
  float value = 0;
  while (lines.next_triple(sample, neuron, value, kMaxSamples, neurons)) {
    if (sample + 1 < in.count()) lines.fail("samples must come in ascending order");
    while (in.count() <= sample) in.offsets.push_back(in.offsets.back());
    const uint32_t first = in.offsets[sample];
    if (in.index.size() > first && neuron <= in.index.back()) lines.fail("a sample's neurons must ascend");
    in.index.push_back(neuron);
    in.value.push_back(value);
    ++in.offsets.back();
  }
  return in;
}

std::vector<uint32_t> read_categories(const fs::path& file, size_t samples) {
  TsvLines lines(file, /*may_be_empty=*/true);  // no sample survived
  return read_categories(lines, samples);
}

std::vector<uint32_t> read_categories(TsvLines& lines, size_t samples) {
  std::vector<uint32_t> out;
  uint32_t s = 0;
  const auto max = static_cast<uint32_t>(std::min<size_t>(samples, UINT32_MAX - 1));
  while (lines.next_index(s, max)) {
    if (!out.empty() && s <= out.back()) lines.fail("categories must ascend");
    out.push_back(s);
  }
  return out;
}

void write_network(const fs::path& dir, const SparseNet& net) {
  for (size_t l = 0; l < net.layers.size(); ++l) {
    const SparseLayer& layer = net.layers[l];
    std::string text;
    text.reserve(layer.edges() * 16);
    for (uint32_t j = 0; j < layer.neurons; ++j) {
      for (uint32_t e = layer.offsets[j]; e < layer.offsets[j + 1]; ++e)
        append_line(text, layer.sources[e], j, layer.weights[e]);
    }
    write_text(layer_file(dir, net.neurons, static_cast<uint32_t>(l + 1)), text);
  }
}

void write_inputs(const fs::path& dir, const SparseInputs& in) {
  std::string text;
  text.reserve(in.nonzeros() * 12);
  for (size_t s = 0; s < in.count(); ++s) {
    for (uint32_t k = in.offsets[s]; k < in.offsets[s + 1]; ++k)
      append_line(text, static_cast<uint32_t>(s), in.index[k], in.value[k]);
  }
  write_text(inputs_file(dir, in.neurons), text);
}

void write_categories(const fs::path& file, const std::vector<uint32_t>& categories) {
  std::string text;
  for (uint32_t c : categories) text += std::to_string(c + 1) + "\n";
  write_text(file, text);
}

}  // namespace gossipd::trainer::sparse
