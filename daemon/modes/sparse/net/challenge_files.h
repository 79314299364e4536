#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"

namespace gossipd::trainer::sparse {

// The Sparse DNN Graph Challenge's files, laid out as they are distributed,
// so that the official ones run as they are:
//   DIR/neuronN/nN-lK.tsv          layer K (1..L): "i<TAB>j<TAB>w" per edge, W(i, j) = w
//   DIR/sparse-images-N.tsv        "sample<TAB>neuron<TAB>value" per nonzero input
//   DIR/neuronN-lL-categories.tsv  the samples whose last layer is not all zeros, one per line
// Every index is 1-based; every line ends with a newline (a file that does
// not is taken as truncated). Readers throw DataError "FILE:LINE: reason"
// (or "FILE: reason"), naming what to do.
namespace fs = std::filesystem;

fs::path layer_file(const fs::path& dir, uint32_t neurons, uint32_t layer);  // layer from 1
fs::path inputs_file(const fs::path& dir, uint32_t neurons);
fs::path categories_file(const fs::path& dir, uint32_t neurons, uint32_t layers);

// The widths N with a DIR/neuronN directory, ascending.
std::vector<uint32_t> network_widths(const fs::path& dir);
// How many layer files DIR/neuronN/nN-l1.tsv, -l2, ... exist in a row.
uint32_t count_layers(const fs::path& dir, uint32_t neurons);

// Layers 1..layers, every neuron's bias `bias`. A layer whose largest neuron
// is not N (a layer of another network) is refused.
SparseNet read_network(const fs::path& dir, uint32_t neurons, uint32_t layers, float bias);
// Samples are numbered 1 to 10,000,000.
SparseInputs read_inputs(const fs::path& dir, uint32_t neurons);
// 0-based samples, ascending; each must be below `samples`.
std::vector<uint32_t> read_categories(const fs::path& file, size_t samples);

// The same from text already taken apart into lines (what the file readers
// use; the fuzz target feeds them bytes).
class TsvLines;
SparseLayer read_layer(TsvLines& lines, uint32_t neurons, float bias);
SparseInputs read_inputs(TsvLines& lines, uint32_t neurons);
std::vector<uint32_t> read_categories(TsvLines& lines, size_t samples);

// Writers create DIR/neuronN as needed; each file is written durably
// (trainer/durable_file.h).
void write_network(const fs::path& dir, const SparseNet& net);
void write_inputs(const fs::path& dir, const SparseInputs& inputs);
void write_categories(const fs::path& file, const std::vector<uint32_t>& categories);

}  // namespace gossipd::trainer::sparse
