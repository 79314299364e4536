// What AllReduce-SGD's --robust clip computes at a block's owner, against
// what the plain allreduce computes there, on the same copies, timed
// alternately in one run: CenteredClip::aggregate (protocol/robust) over M
// copies of W floats (honest copies: one shared model plus Gaussian noise,
// a pass of momentum-like differences) against their plain mean (the sum a
// reduce-scatter folds, then the scale).
//
//   centered_clip_bench [M [W [REPS]]]     (4 58800 1000: the quickstart's
//                                           MLP over 4 members)
//
// Prints the median and least microseconds of each per step over 9 batches
// and their ratio (robust / plain).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "protocol/robust/centered_clip.h"

namespace {

using Clock = std::chrono::steady_clock;

template <class Step>
double micros_per_step(int reps, Step step) {
  const auto start = Clock::now();
  for (int r = 0; r < reps; ++r) step();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / reps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t m = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 4;
  const size_t width = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 58800;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 1000;
  if (m < 1 || width < 1 || reps < 1) {
    std::fprintf(stderr, "centered_clip_bench: M, W and REPS must be positive integers\n");
    return 2;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> model(width), rows(m * width), out(width);
  for (float& x : model) x = 0.1f * normal(rng);
  for (size_t i = 0; i < m; ++i)
    for (size_t k = 0; k < width; ++k) rows[i * width + k] = model[k] + 0.05f * normal(rng);
  std::vector<std::string> members;
  for (size_t i = 0; i < m; ++i) members.push_back(std::to_string(i));  // any distinct names
  gossipd::protocol::CenteredClip clip{gossipd::protocol::ClipSpec{}};
  const auto robust = [&] {
    clip.aggregate(members, 0, rows, out);
    clip.end_round();
  };
  const auto plain = [&] {
    std::copy_n(rows.begin(), width, out.begin());
    for (size_t i = 1; i < m; ++i)
      for (size_t k = 0; k < width; ++k) out[k] += rows[i * width + k];
    const float inv = 1.0f / static_cast<float>(m);
    for (float& x : out) x *= inv;
  };
  std::vector<double> with, without;
  for (int batch = 0; batch < 9; ++batch) {
    with.push_back(micros_per_step(reps, robust));
    without.push_back(micros_per_step(reps, plain));
  }
  std::printf(
      "%zu copies of %zu floats, 9 alternated batches of %d steps: CenteredClip %.1f us (least %.1f), "
      "plain mean %.1f us (least %.1f), ratio %.2f (medians)\n",
      m, width, reps, median(with), *std::min_element(with.begin(), with.end()), median(without),
      *std::min_element(without.begin(), without.end()), median(with) / median(without));
}
