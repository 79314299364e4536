#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "daemon/modes/sparse/net/sparse_kernel.h"
#include "daemon/modes/sparse/net/sparse_net.h"

namespace gossipd::trainer::sparse {

// The kernels of training a sparse network, on some rows (neurons) of one
// layer: the whole layer in the serial trainer, a process's rows in the
// row-parallel one, so both run the same arithmetic. Activations are held
// neuron-major as in the inference (y[j * stride + lane]) and indexed by
// the previous layer's neuron numbers; `rows` are the layer's rows kept
// (their sources in the serial order), `lanes` the batch's samples.
//
// The trainable network is the challenge's without its cap: ReLU(Y·W + b),
// the bias on every neuron, so that its gradient is the plain ReLU
// network's; the sparsity pattern is kept (only existing edges change).

// Row k's output is neuron at[k] of this layer (k when `at` is null): out,
// like y, holds the whole layer neuron-major.
//
// out[at[k]] = max(Σ_e w_e · y[source_e] + b_k, 0) for every row k.
void train_forward(const SparseLayer& rows, const uint32_t* at, const float* y, float* out, Block b);

// The rows' part of the backward pass. `g` holds d loss / d out (laid out
// like `out`) and becomes d loss / d (pre-activation) in place at the
// rows (zero where out is zero). Adds Σ_lane δ to db[k] and
// Σ_lane δ · y[source_e] to dw[e]; when `gprev` is not null, adds
// w_e · δ to gprev[source_e] (the previous layer's neurons, neuron-major).
void train_backward(const SparseLayer& rows, const uint32_t* at, const float* y, const float* out, float* g,
                    Block b, float* dw, float* db, float* gprev);

// The dense classification head on the last layer's neurons: logits =
// V · y + c, V of classes × N (class-major), as a whole or for some of
// the neurons (the row-parallel trainer's share: the partial logits of its
// neurons, summed over the processes afterwards).
struct HeadShare {
  uint32_t classes = 10;
  std::vector<uint32_t> neurons;  // the last layer's neurons this share holds, ascending
  std::vector<float> weights;     // classes × neurons.size(): weights[c * size + k] for neuron neurons[k]
};

// logits[c * lanes + lane] += Σ_k V[c, k] · y[neurons[k] * stride + lane].
void head_forward(const HeadShare& h, const float* y, Block b, float* logits);

// dV[c, k] += Σ_lane dlogits[c, lane] · y[neurons[k], lane];
// g[neurons[k], lane] = Σ_c V[c, k] · dlogits[c, lane] (set, not added).
void head_backward(const HeadShare& h, const float* y, const float* dlogits, Block b, float* dv, float* g);

// Logits class-major (as head_forward writes them) to sample-major (as
// trainer::SoftmaxCrossEntropy reads them), and its gradient back.
std::vector<float> samples_major(std::span<const float> class_major, uint32_t classes, size_t lanes);
void to_class_major(std::span<const float> sample_major, uint32_t classes, size_t lanes,
                    std::span<float> class_major);

}  // namespace gossipd::trainer::sparse
