#include "trainer/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>

#include "trainer/errors.h"

namespace gossipd::trainer {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dimension
constexpr uint32_t kMaxSamples = 10'000'000;
constexpr uint32_t kMaxSide = 4096;
// Fashion-MNIST training-set pixel statistics (after scaling to [0, 1]).
constexpr float kPixelMean = 0.2860f;
constexpr float kPixelStd = 0.3530f;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// gzread reads plain files too, so one reader serves .gz and uncompressed IDX.
class IdxReader {
 public:
  explicit IdxReader(const std::filesystem::path& path) : path_(path) {
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) fail("cannot open file");
  }

  void read(void* out, size_t bytes) {
    auto* dst = static_cast<unsigned char*>(out);
    while (bytes > 0) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
      int got = gzread(file_.get(), dst, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_.get(), &code);
        fail(std::string("corrupt file (") + msg + ")");
      }
      if (got == 0) fail("truncated file (ends before the declared number of items)");
      dst += got;
      bytes -= static_cast<size_t>(got);
    }
  }

  uint32_t read_be32() {
    std::array<unsigned char, 4> b{};
    read(b.data(), b.size());
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }

  void expect_end() {
    unsigned char extra = 0;
    int got = gzread(file_.get(), &extra, 1);
    if (got != 0) fail("trailing bytes after the declared number of items (corrupt file?)");
  }

  [[noreturn]] void fail(const std::string& what) const { throw DataError(path_.string() + ": " + what); }

 private:
  std::filesystem::path path_;
  GzFile file_;
};

// Reads `total` pixels, normalised into floats as they arrive, a chunk at a
// time: the first `keep` are returned, the rest are read (so checked) and
// dropped. No pass zeroes the whole array before it is written.
std::vector<float> read_pixels(IdxReader& in, size_t total, size_t keep) {
  constexpr size_t kChunk = 1 << 16;
  const float scale = 1.0f / (255.0f * kPixelStd);
  const float shift = kPixelMean / kPixelStd;
  std::vector<float> out;
  out.reserve(keep);
  std::vector<uint8_t> chunk(kChunk);
  for (size_t done = 0; done < total;) {
    const size_t n = std::min(kChunk, total - done);
    in.read(chunk.data(), n);
    const size_t kept = done < keep ? std::min(n, keep - done) : 0;
    const size_t at = out.size();
    out.resize(at + kept);
    std::transform(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(kept),
                   out.begin() + static_cast<std::ptrdiff_t>(at),
                   [&](uint8_t p) { return static_cast<float>(p) * scale - shift; });
    done += n;
  }
  return out;
}

}  // namespace

float pixel_intensity(float normalised) { return normalised * kPixelStd + kPixelMean; }

Dataset Dataset::head(size_t count) const {
  count = std::min(count, size());
  Dataset out;
  out.height = height;
  out.width = width;
  out.channels = channels;
  out.classes = classes;
  out.labels.assign(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(count));
  out.images.assign(images.begin(), images.begin() + static_cast<std::ptrdiff_t>(count * sample_size()));
  return out;
}

Dataset load_idx_pair(const std::filesystem::path& images_file, const std::filesystem::path& labels_file,
                      size_t limit) {
  IdxReader images(images_file);
  uint32_t magic = images.read_be32();
  if (magic != kImagesMagic) {
    images.fail("wrong magic number " + std::to_string(magic) + " (expected 2051: an IDX image file)");
  }
  uint32_t count = images.read_be32();
  uint32_t rows = images.read_be32();
  uint32_t cols = images.read_be32();
  if (count == 0 || count > kMaxSamples) images.fail("implausible image count " + std::to_string(count));
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide) {
    images.fail("implausible image size " + std::to_string(rows) + "x" + std::to_string(cols));
  }

  IdxReader labels(labels_file);
  magic = labels.read_be32();
  if (magic != kLabelsMagic) {
    labels.fail("wrong magic number " + std::to_string(magic) + " (expected 2049: an IDX label file)");
  }
  uint32_t label_count = labels.read_be32();
  if (label_count != count) {
    labels.fail("holds " + std::to_string(label_count) + " labels but " + images_file.string() + " holds " +
                std::to_string(count) + " images");
  }

  Dataset ds;
  ds.height = static_cast<int>(rows);
  ds.width = static_cast<int>(cols);
  ds.labels.resize(count);
  labels.read(ds.labels.data(), count);
  labels.expect_end();
  for (uint8_t l : ds.labels) {
    if (l >= ds.classes) labels.fail("label " + std::to_string(l) + " out of range 0..9");
  }

  const size_t keep = limit > 0 ? std::min<size_t>(limit, count) : count;
  ds.images = read_pixels(images, count * ds.sample_size(), keep * ds.sample_size());
  images.expect_end();
  ds.labels.resize(keep);
  return ds;
}

namespace {

// What identifies a load: the files as they are now, and the limit.
std::string load_key(const std::filesystem::path& images, const std::filesystem::path& labels, size_t limit) {
  std::string key = std::to_string(limit);
  for (const auto& p : {images, labels}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    const auto changed = std::filesystem::last_write_time(p, ec).time_since_epoch().count();
    key += "|" + std::filesystem::absolute(p, ec).string() + "|" + std::to_string(size) + "|" +
           std::to_string(changed);
  }
  return key;
}

// load_idx_pair once per key and process; later loads share the pixels.
Dataset load_shared(const std::filesystem::path& images, const std::filesystem::path& labels, size_t limit) {
  static std::mutex mu;
  static std::map<std::string, Dataset> loaded;
  const std::string key = load_key(images, labels, limit);
  // Held while loading: members that start at once wait for the one load
  // instead of each reading its own copy (64 at once peaked at 11 GB).
  std::lock_guard lock(mu);
  if (const auto it = loaded.find(key); it != loaded.end()) return it->second;
  return loaded.emplace(key, load_idx_pair(images, labels, limit)).first->second;
}

}  // namespace

Dataset load_fashion_mnist(const std::filesystem::path& dir, Split split, size_t limit) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  auto find = [&](const std::string& stem) {
    for (const char* ext : {".gz", ""}) {
      auto p = dir / (stem + ext);
      if (std::filesystem::exists(p)) return p;
    }
    throw DataError("Fashion-MNIST file " + (dir / (stem + ".gz")).string() +
                    " not found: install the Debian package dataset-fashion-mnist "
                    "(apt-get install dataset-fashion-mnist) or point --data at a directory "
                    "holding the IDX files");
  };
  return load_shared(find(prefix + "-images-idx3-ubyte"), find(prefix + "-labels-idx1-ubyte"), limit);
}

Splits load_fashion_mnist_splits(const std::filesystem::path& dir, size_t train_limit, size_t test_limit) {
  return {load_fashion_mnist(dir, Split::kTrain, train_limit),
          load_fashion_mnist(dir, Split::kTest, test_limit)};
}

}  // namespace gossipd::trainer
