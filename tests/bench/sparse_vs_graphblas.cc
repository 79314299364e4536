// The serial sparse inference (daemon/modes/sparse/net) against SuiteSparse:GraphBLAS
// on the same Sparse DNN Graph Challenge files, one thread each, timed
// alternately in one run. GraphBLAS runs the challenge's reference form (as
// LAGraph's dnn does it): per layer Y = Y·W (plus-times), Y = Y·diag(b)
// (plus-plus: b added to every entry present), keep Y > 0, Y = min(Y, 32).
//
//   sparse_vs_graphblas DIR N L [INPUTS [REPS]]
//
// Prints one JSON line per run and a summary line: medians, minima, the
// ratio of edges/s (ours / GraphBLAS) and whether categories and final
// activations agree.
extern "C" {  // GraphBLAS.h declares C functions without saying so to C++
#include <GraphBLAS.h>
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/modes/sparse/net/challenge_files.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/net/sparse_infer.h"

namespace {

namespace sp = gossipd::trainer::sparse;

void check(GrB_Info info, const char* what) {
  if (info == GrB_SUCCESS) return;
  std::fprintf(stderr, "sparse_vs_graphblas: %s failed (GrB_Info %d)\n", what, static_cast<int>(info));
  std::exit(1);
}

struct GraphblasNet {
  std::vector<GrB_Matrix> weights, biases;
  GrB_Matrix y0 = nullptr;
};

GrB_Matrix layer_matrix(const sp::SparseLayer& l) {
  std::vector<GrB_Index> rows, cols;
  for (uint32_t j = 0; j < l.neurons; ++j)
    for (uint32_t e = l.offsets[j]; e < l.offsets[j + 1]; ++e) {
      rows.push_back(l.sources[e]);
      cols.push_back(j);
    }
  GrB_Matrix w;
  check(GrB_Matrix_new(&w, GrB_FP32, l.neurons, l.neurons), "new W");
  check(GrB_Matrix_build_FP32(w, rows.data(), cols.data(), l.weights.data(), rows.size(), GrB_PLUS_FP32),
        "build W");
  return w;
}

GrB_Matrix bias_matrix(const sp::SparseLayer& l) {
  std::vector<GrB_Index> d(l.neurons);
  for (uint32_t j = 0; j < l.neurons; ++j) d[j] = j;
  GrB_Matrix b;
  check(GrB_Matrix_new(&b, GrB_FP32, l.neurons, l.neurons), "new bias");
  check(GrB_Matrix_build_FP32(b, d.data(), d.data(), l.bias.data(), d.size(), GrB_PLUS_FP32), "build bias");
  return b;
}

GraphblasNet to_graphblas(const sp::SparseNet& net, const sp::SparseInputs& in) {
  GraphblasNet g;
  for (const sp::SparseLayer& l : net.layers) {
    g.weights.push_back(layer_matrix(l));
    g.biases.push_back(bias_matrix(l));
  }
  std::vector<GrB_Index> rows, cols;
  for (size_t s = 0; s < in.count(); ++s)
    for (uint32_t k = in.offsets[s]; k < in.offsets[s + 1]; ++k) {
      rows.push_back(s);
      cols.push_back(in.index[k]);
    }
  check(GrB_Matrix_new(&g.y0, GrB_FP32, in.count(), net.neurons), "new Y0");
  check(GrB_Matrix_build_FP32(g.y0, rows.data(), cols.data(), in.value.data(), rows.size(), GrB_PLUS_FP32),
        "build Y0");
  return g;
}

// The inference; returns Y (the caller frees it) and the seconds it took.
GrB_Matrix run_graphblas(const GraphblasNet& g, double& seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  GrB_Matrix y;
  check(GrB_Matrix_dup(&y, g.y0), "dup Y0");
  for (size_t l = 0; l < g.weights.size(); ++l) {
    check(GrB_mxm(y, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP32, y, g.weights[l], nullptr), "Y*W");
    check(GrB_mxm(y, nullptr, nullptr, GxB_PLUS_PLUS_FP32, y, g.biases[l], nullptr), "Y+b");
    check(GrB_Matrix_select_FP32(y, nullptr, nullptr, GrB_VALUEGT_FP32, y, 0.0f, nullptr), "Y>0");
    check(
        GrB_Matrix_apply_BinaryOp2nd_FP32(y, nullptr, nullptr, GrB_MIN_FP32, y, sp::kChallengeYmax, nullptr),
        "min(Y,32)");
  }
  check(GrB_Matrix_wait(y, GrB_MATERIALIZE), "wait");
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return y;
}

using Entry = std::tuple<GrB_Index, GrB_Index, float>;

std::vector<Entry> entries_of(GrB_Matrix y) {
  GrB_Index n = 0;
  check(GrB_Matrix_nvals(&n, y), "nvals");
  std::vector<GrB_Index> r(n), c(n);
  std::vector<float> v(n);
  check(GrB_Matrix_extractTuples_FP32(r.data(), c.data(), v.data(), &n, y), "extract");
  std::vector<Entry> out(n);
  for (GrB_Index k = 0; k < n; ++k) out[k] = {r[k], c[k], v[k]};
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Entry> entries_of(const sp::InferResult& r) {
  std::vector<Entry> out;
  for (size_t k = 0; k < r.categories.size(); ++k)
    for (uint32_t e = r.activations.offsets[k]; e < r.activations.offsets[k + 1]; ++e)
      out.emplace_back(r.categories[k], r.activations.index[e], r.activations.value[e]);
  return out;
}

// "same" when the same entries are present; the largest difference of values.
std::string compare(const std::vector<Entry>& a, const std::vector<Entry>& b, double& max_diff) {
  max_diff = 0;
  if (a.size() != b.size()) return "different nonzeros";
  for (size_t k = 0; k < a.size(); ++k) {
    if (std::get<0>(a[k]) != std::get<0>(b[k]) || std::get<1>(a[k]) != std::get<1>(b[k]))
      return "different nonzeros";
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(std::get<2>(a[k]) - std::get<2>(b[k]))));
  }
  return "same";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: sparse_vs_graphblas DIR NEURONS LAYERS [INPUTS [REPS]]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const auto n = static_cast<uint32_t>(std::stoul(argv[2]));
  const auto layers = static_cast<uint32_t>(std::stoul(argv[3]));
  const size_t inputs = argc > 4 ? std::stoul(argv[4]) : 0;
  const int reps = argc > 5 ? std::stoi(argv[5]) : 3;
  const sp::SparseNet net = sp::read_network(dir, n, layers, sp::challenge_bias(n));
  sp::SparseInputs in = sp::read_inputs(dir, n);
  if (inputs != 0) in = in.head(inputs);
  check(GrB_init(GrB_NONBLOCKING), "init");
  check(GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, 1), "one thread");
  const GraphblasNet g = to_graphblas(net, in);
  const double edges = static_cast<double>(in.count()) * static_cast<double>(net.edges());
  std::vector<double> ours, theirs;
  std::string verdict = "same";
  double max_diff = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const sp::InferResult r = sp::infer(net, in, {.keep_activations = true});
    double gb_s = 0;
    GrB_Matrix y = run_graphblas(g, gb_s);
    double diff = 0;
    const std::string v = compare(entries_of(r), entries_of(y), diff);
    if (v != "same") verdict = v;
    max_diff = std::max(max_diff, diff);
    GrB_Matrix_free(&y);
    ours.push_back(edges / r.seconds);
    theirs.push_back(edges / gb_s);
    std::printf(
        "{\"bench\":\"sparse_infer\",\"neurons\":%u,\"layers\":%u,\"inputs\":%zu,\"rep\":%d,"
        "\"ours_s\":%.4f,\"graphblas_s\":%.4f,\"categories\":%zu,\"agree\":\"%s\",\"max_diff\":%g}\n",
        n, layers, in.count(), rep, r.seconds, gb_s, r.categories.size(), v.c_str(), diff);
    std::fflush(stdout);
  }
  std::printf(
      "summary: N=%u L=%u inputs=%zu reps=%d  ours %.4g edges/s (best %.4g)  GraphBLAS %.4g edges/s "
      "(best %.4g)  ratio of medians %.2fx  categories and activations: %s (max |diff| %g)\n",
      n, layers, in.count(), reps, median(ours), *std::max_element(ours.begin(), ours.end()), median(theirs),
      *std::max_element(theirs.begin(), theirs.end()), median(ours) / median(theirs), verdict.c_str(),
      max_diff);
  GrB_finalize();
  return verdict == "same" ? 0 : 1;
}
