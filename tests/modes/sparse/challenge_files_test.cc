// The challenge's files: what is written reads back the same, and every
// kind of bad file is one DataError naming the file (and line).
#include "daemon/modes/sparse/net/challenge_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/modes/sparse/net/fashion_inputs.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/net/tsv_lines.h"
#include "tests/support/temp_dir.h"
#include "trainer/errors.h"

namespace gossipd::trainer::sparse {
namespace {

using gossipd::testing::TempDir;

TEST(ChallengeFiles, WhatIsWrittenReadsBackTheSame) {
  TempDir tmp("gossipd_sparse_files");
  const SparseNet net = make_radix_net(64, 3);
  SparseInputs in;
  in.neurons = 64;
  in.index = {0, 5, 63, 7};
  in.value = {1.0f, 0.25f, 3.0f, 1.0f};
  in.offsets = {0, 3, 4};
  write_network(tmp.path(), net);
  write_inputs(tmp.path(), in);
  write_categories(categories_file(tmp.path(), 64, 3), {0, 1});

  EXPECT_EQ(network_widths(tmp.path()), std::vector<uint32_t>{64});
  EXPECT_EQ(count_layers(tmp.path(), 64), 3u);
  const SparseNet back = read_network(tmp.path(), 64, 3, challenge_bias(64));
  for (size_t l = 0; l < 3; ++l) {
    EXPECT_EQ(back.layers[l].offsets, net.layers[l].offsets);
    EXPECT_EQ(back.layers[l].sources, net.layers[l].sources);
    EXPECT_EQ(back.layers[l].weights, net.layers[l].weights);
  }
  const SparseInputs in_back = read_inputs(tmp.path(), 64);
  EXPECT_EQ(in_back.offsets, in.offsets);
  EXPECT_EQ(in_back.index, in.index);
  EXPECT_EQ(in_back.value, in.value);
  EXPECT_EQ(read_categories(categories_file(tmp.path(), 64, 3), 2), (std::vector<uint32_t>{0, 1}));
}

// The DataError a layer text gives, or "" when it reads.
std::string layer_error(const std::string& text, uint32_t neurons = 4) {
  try {
    TsvLines lines = TsvLines::of_text("n4-l1.tsv", text);
    read_layer(lines, neurons, -0.3f);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(ChallengeFiles, EveryBadLayerIsOneErrorNamingFileAndLine) {
  const std::string good = "1\t2\t0.5\n4\t4\t1\n";
  EXPECT_EQ(layer_error(good), "");
  const std::pair<std::string, std::string> cases[] = {
      {"1\t2\t0.5\n4\t4\t1", "n4-l1.tsv: the last line has no newline"},  // truncated
      {"", "n4-l1.tsv: empty"},
      {"1\t2\n4\t4\t1\n", "n4-l1.tsv:1: expected a finite number"},
      {"1\t2\t0.5\n4\tx\t1\n", "n4-l1.tsv:2: expected a whole number"},
      {"1\t2\t0.5\n4\t5\t1\n", "n4-l1.tsv:2: 5 is outside 1..4"},
      {"0\t2\t0.5\n4\t4\t1\n", "n4-l1.tsv:1: 0 is outside 1..4"},
      {"1\t2\tnan\n4\t4\t1\n", "n4-l1.tsv:1: expected a finite number"},
      {"1\t2\t0.5\t7\n4\t4\t1\n", "n4-l1.tsv:1: more fields than expected"},
      {"1\t2\t0.5\n1\t3\t1\n", "n4-l1.tsv: its largest neuron is 3, the network has 4"},
      {"1\t2\t0.5\n1\t2\t1\n4\t4\t1\n", "n4-l1.tsv: edge 1 -> 2 is given twice"},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = layer_error(text);
    EXPECT_EQ(got.rfind(want, 0), 0u) << "text '" << text << "' gave '" << got << "'";
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

TEST(ChallengeFiles, BadInputsAndCategoriesNameFileAndLine) {
  const auto inputs_error = [](const std::string& text) -> std::string {
    try {
      TsvLines lines = TsvLines::of_text("images.tsv", text);
      read_inputs(lines, 4);
    } catch (const DataError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(inputs_error("1\t1\t1\n1\t3\t1\n3\t2\t1\n"), "");
  EXPECT_EQ(inputs_error("2\t1\t1\n1\t3\t1\n").rfind("images.tsv:2: samples must come in ascending order", 0),
            0u);
  EXPECT_EQ(inputs_error("1\t3\t1\n1\t1\t1\n").rfind("images.tsv:2: a sample's neurons must ascend", 0), 0u);
  TsvLines cats = TsvLines::of_text("cats.tsv", "1\n5\n");
  try {
    read_categories(cats, 3);
    ADD_FAILURE() << "a category past the inputs read";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cats.tsv:2: 5 is outside 1..3", 0), 0u) << e.what();
  }
  TsvLines none = TsvLines::of_text("cats.tsv", "", /*may_be_empty=*/true);
  EXPECT_TRUE(read_categories(none, 3).empty());
  EXPECT_THROW(read_network("/nonexistent/sparse", 64, 1, -0.3f), DataError);
}

TEST(FashionInputs, ResizesAndBinarisesAtHalfIntensity) {
  Dataset d;
  d.height = d.width = 28;
  // Normalised values whose intensity is 1 (left half) and 0 (right half).
  const float white = (1.0f - pixel_intensity(0.0f)) / (pixel_intensity(1.0f) - pixel_intensity(0.0f));
  const float black = -pixel_intensity(0.0f) / (pixel_intensity(1.0f) - pixel_intensity(0.0f));
  d.images.resize(2 * 28 * 28, black);
  for (int r = 0; r < 28; ++r)
    for (int c = 0; c < 14; ++c) d.images[r * 28 + c] = white;
  d.labels = {0, 1};  // the second image is all black
  const SparseInputs in = inputs_from_images(d, 64, 5);
  ASSERT_EQ(in.count(), 2u);
  ASSERT_EQ(in.offsets[1], 32u);  // the left 4 of 8 columns
  for (uint32_t k = 0; k < 32; ++k) EXPECT_LT(in.index[k] % 8, 4u);
  EXPECT_EQ(in.offsets[2], 32u);
  EXPECT_THROW(inputs_from_images(d, 60, 1), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer::sparse
