#include "trainer/dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/temp_dir.h"
#include "trainer/errors.h"

namespace gossipd::trainer {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> be32(uint32_t v) {
  return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

std::vector<uint8_t> idx_images(uint32_t magic, uint32_t count, uint32_t rows, uint32_t cols, size_t pixels) {
  std::vector<uint8_t> out;
  for (uint32_t v : {magic, count, rows, cols}) {
    auto b = be32(v);
    out.insert(out.end(), b.begin(), b.end());
  }
  for (size_t i = 0; i < pixels; ++i) out.push_back(static_cast<uint8_t>(i * 7));
  return out;
}

std::vector<uint8_t> idx_labels(uint32_t magic, uint32_t count, std::vector<uint8_t> labels) {
  std::vector<uint8_t> out;
  for (uint32_t v : {magic, count}) {
    auto b = be32(v);
    out.insert(out.end(), b.begin(), b.end());
  }
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

class DatasetFiles : public ::testing::Test {
 protected:
  fs::path write_gz(const std::string& name, const std::vector<uint8_t>& bytes) {
    fs::path p = dir_ / name;
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return p;
  }
  fs::path write_plain(const std::string& name, const std::vector<uint8_t>& bytes) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  std::string error_of(const fs::path& images, const fs::path& labels) {
    try {
      load_idx_pair(images, labels);
    } catch (const DataError& e) {
      return e.what();
    }
    return "";
  }

  gossipd::testing::TempDir tmp_{"gossipd_ds"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(DatasetFiles, ReadsGzipAndPlainAndNormalises) {
  auto img = write_gz("i.gz", idx_images(2051, 3, 2, 2, 12));
  auto lab = write_plain("l", idx_labels(2049, 3, {0, 9, 4}));
  Dataset d = load_idx_pair(img, lab);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.height, 2);
  EXPECT_EQ(d.width, 2);
  EXPECT_EQ(d.sample_size(), 4u);
  EXPECT_EQ(d.labels[1], 9);
  // pixel 0 is 0 -> -mean/std; pixel 1 is 7 -> (7/255 - mean)/std
  EXPECT_NEAR(d.images[0], -0.2860f / 0.3530f, 1e-5);
  EXPECT_NEAR(d.images[1], (7.0f / 255.0f - 0.2860f) / 0.3530f, 1e-5);
}

TEST_F(DatasetFiles, WrongMagicIsNamed) {
  auto img = write_gz("i.gz", idx_images(2049, 3, 2, 2, 12));
  auto lab = write_gz("l.gz", idx_labels(2049, 3, {0, 1, 2}));
  EXPECT_NE(error_of(img, lab).find("wrong magic"), std::string::npos);
  auto img2 = write_gz("i2.gz", idx_images(2051, 3, 2, 2, 12));
  auto lab2 = write_gz("l2.gz", idx_labels(2051, 3, {0, 1, 2}));
  EXPECT_NE(error_of(img2, lab2).find("wrong magic"), std::string::npos);
}

TEST_F(DatasetFiles, TruncatedImagesAndLabels) {
  auto img = write_gz("i.gz", idx_images(2051, 3, 2, 2, 11));
  auto lab = write_gz("l.gz", idx_labels(2049, 3, {0, 1, 2}));
  std::string err = error_of(img, lab);
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  auto img2 = write_gz("i2.gz", idx_images(2051, 3, 2, 2, 12));
  auto lab2 = write_gz("l2.gz", idx_labels(2049, 3, {0, 1}));
  EXPECT_NE(error_of(img2, lab2).find("truncated"), std::string::npos);
  auto header_only = write_gz("h.gz", {0, 0, 8});
  EXPECT_NE(error_of(header_only, lab2).find("truncated"), std::string::npos);
}

TEST_F(DatasetFiles, CorruptGzipIsReported) {
  auto good = idx_images(2051, 3, 2, 2, 12);
  auto img = write_gz("i.gz", good);
  // Flip bytes in the middle of the deflate stream.
  std::ifstream in(img, std::ios::binary);
  std::vector<uint8_t> raw((std::istreambuf_iterator<char>(in)), {});
  in.close();
  for (size_t i = 12; i < raw.size() - 8; ++i) raw[i] ^= 0x5a;
  auto bad = write_plain("bad.gz", raw);
  auto lab = write_gz("l.gz", idx_labels(2049, 3, {0, 1, 2}));
  std::string err = error_of(bad, lab);
  EXPECT_FALSE(err.empty());
  EXPECT_NE(err.find("bad.gz"), std::string::npos) << err;
}

TEST_F(DatasetFiles, CountMismatchBadLabelAndTrailingBytes) {
  auto img = write_gz("i.gz", idx_images(2051, 3, 2, 2, 12));
  auto lab = write_gz("l.gz", idx_labels(2049, 4, {0, 1, 2, 3}));
  EXPECT_NE(error_of(img, lab).find("holds 4 labels"), std::string::npos);
  auto lab_range = write_gz("l2.gz", idx_labels(2049, 3, {0, 1, 12}));
  EXPECT_NE(error_of(img, lab_range).find("out of range"), std::string::npos);
  auto img_long = write_gz("i3.gz", idx_images(2051, 3, 2, 2, 13));
  auto lab_ok = write_gz("l3.gz", idx_labels(2049, 3, {0, 1, 2}));
  EXPECT_NE(error_of(img_long, lab_ok).find("trailing"), std::string::npos);
  auto img_zero = write_gz("i4.gz", idx_images(2051, 0, 2, 2, 0));
  EXPECT_NE(error_of(img_zero, lab_ok).find("implausible"), std::string::npos);
}

TEST_F(DatasetFiles, ALimitKeepsTheFirstSamplesAndStillChecksTheWholeFile) {
  auto img = write_gz("i.gz", idx_images(2051, 3, 2, 2, 12));
  auto lab = write_gz("l.gz", idx_labels(2049, 3, {5, 9, 4}));
  const Dataset all = load_idx_pair(img, lab);
  const Dataset two = load_idx_pair(img, lab, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two.labels, std::vector<uint8_t>(all.labels.begin(), all.labels.begin() + 2));
  EXPECT_EQ(two.images, std::vector<float>(all.images.begin(), all.images.begin() + 8));
  EXPECT_EQ(load_idx_pair(img, lab, 7).size(), 3u);  // more than the file holds: all of it
  // What is not kept is still read: a truncated or overlong tail, or a bad
  // label past the limit, is the same error as without a limit.
  auto short_img = write_gz("i2.gz", idx_images(2051, 3, 2, 2, 11));
  auto long_img = write_gz("i3.gz", idx_images(2051, 3, 2, 2, 13));
  auto bad_lab = write_gz("l2.gz", idx_labels(2049, 3, {0, 1, 12}));
  for (const auto& [images, labels, what] : {std::tuple{short_img, lab, "truncated"},
                                             {long_img, lab, "trailing"},
                                             {img, bad_lab, "out of range"}}) {
    try {
      load_idx_pair(images, labels, 1);
      ADD_FAILURE() << "no error for " << what;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

TEST_F(DatasetFiles, TheSameFilesLoadedAgainShareTheirPixelsAndChangedFilesAreReadAgain) {
  write_gz("train-images-idx3-ubyte.gz", idx_images(2051, 3, 2, 2, 12));
  write_gz("train-labels-idx1-ubyte.gz", idx_labels(2049, 3, {5, 9, 4}));
  const Dataset a = load_fashion_mnist(dir_, Split::kTrain);
  const Dataset b = load_fashion_mnist(dir_, Split::kTrain);
  EXPECT_TRUE(a.images.shares_with(b.images));  // one copy in memory for every member of a process
  EXPECT_EQ(a.labels, b.labels);
  const Dataset two = load_fashion_mnist(dir_, Split::kTrain, 2);
  EXPECT_FALSE(two.images.shares_with(a.images));
  EXPECT_EQ(two.size(), 2u);
  Dataset c = b;
  c.images[0] = 42.0f;  // a write copies first: nobody else sees it
  EXPECT_NE(a.images[0], 42.0f);
  EXPECT_FALSE(c.images.shares_with(a.images));
  // Other files under the same names (another size) are read anew.
  write_gz("train-images-idx3-ubyte.gz", idx_images(2051, 4, 2, 2, 16));
  write_gz("train-labels-idx1-ubyte.gz", idx_labels(2049, 4, {5, 9, 4, 1}));
  const Dataset d = load_fashion_mnist(dir_, Split::kTrain);
  EXPECT_EQ(d.size(), 4u);
  EXPECT_FALSE(d.images.shares_with(a.images));
}

TEST_F(DatasetFiles, MissingDirectoryNamesPackageAndFlag) {
  try {
    load_fashion_mnist(dir_ / "nope", Split::kTrain);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("dataset-fashion-mnist"), std::string::npos) << m;
    EXPECT_NE(m.find("--data"), std::string::npos) << m;
  }
}

TEST(FashionMnist, RealFilesHaveTheDocumentedShape) {
  Dataset test = load_fashion_mnist(GOSSIPD_TEST_DATA_DIR, Split::kTest);
  EXPECT_EQ(test.size(), 10000u);
  EXPECT_EQ(test.height, 28);
  EXPECT_EQ(test.width, 28);
  std::vector<int> per_class(10, 0);
  for (auto l : test.labels) per_class[l]++;
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test split is balanced
  Dataset head = test.head(10);
  EXPECT_EQ(head.size(), 10u);
  EXPECT_EQ(head.height, 28);
  EXPECT_EQ(head.images, std::vector<float>(test.images.begin(), test.images.begin() + 10 * 784));
  EXPECT_EQ(head.labels, std::vector<uint8_t>(test.labels.begin(), test.labels.begin() + 10));
  const Splits limited = load_fashion_mnist_splits(GOSSIPD_TEST_DATA_DIR, 20, 10);
  EXPECT_EQ(limited.train.size(), 20u);
  EXPECT_EQ(limited.test.images, head.images);
}

}  // namespace
}  // namespace gossipd::trainer
