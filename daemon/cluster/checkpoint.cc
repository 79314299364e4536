#include "daemon/cluster/checkpoint.h"

#include <spdlog/spdlog.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "trainer/durable_file.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'G', 'S', 'D', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kMaxHeaderBytes = 1u << 24;

uint32_t crc_of(const char* p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // crc32 takes a uInt length
    const auto k = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(p), k);
    p += k;
    n -= k;
  }
  return static_cast<uint32_t>(crc);
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

std::string checkpoint_name(uint64_t round) {
  char name[40];
  std::snprintf(name, sizeof name, "ckpt-%012llu.gsck", static_cast<unsigned long long>(round));
  return name;
}

fs::path write_checkpoint(const fs::path& dir, const Checkpoint& c, int keep) {
  proto::CheckpointHeader h;
  *h.mutable_state() = c.state.header;
  *h.mutable_view() = c.view;
  h.set_node_id(c.node_id);
  h.set_test_accuracy(c.test_accuracy);
  const std::string header = h.SerializeAsString();
  std::string data(kMagic, sizeof kMagic);
  put_u32(data, static_cast<uint32_t>(header.size()));
  data += header;
  for (const auto* v : {&c.state.params, &c.state.optimizer}) {
    data.append(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(float));
  }
  put_u32(data, crc_of(data.data(), data.size()));

  const uint64_t round = c.state.header.step();
  const fs::path target = dir / checkpoint_name(round);
  trainer::write_file_durably(target, data);
  std::error_code ec;
  // Only once the new one is durable do the old ones go.
  const auto all = list_checkpoints(dir);
  for (size_t i = static_cast<size_t>(std::max(keep, 1)); i < all.size(); ++i) fs::remove(all[i], ec);
  return target;
}

Checkpoint read_checkpoint(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("cannot open it");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof kMagic + 8 || !std::equal(kMagic, kMagic + sizeof kMagic, data.begin())) {
    throw CheckpointError("not a gossipd checkpoint (bad magic or too short: " + std::to_string(data.size()) +
                          " bytes)");
  }
  const uint32_t header_len = get_u32(data.data() + sizeof kMagic);
  const size_t fixed = sizeof kMagic + 4 + 4;
  if (header_len > kMaxHeaderBytes || header_len > data.size() - fixed) {
    throw CheckpointError("truncated (header of " + std::to_string(header_len) + " bytes, file of " +
                          std::to_string(data.size()) + ")");
  }
  const uint32_t stored_crc = get_u32(data.data() + data.size() - 4);
  proto::CheckpointHeader h;
  if (!h.ParseFromArray(data.data() + sizeof kMagic + 4, static_cast<int>(header_len))) {
    throw CheckpointError("its header does not parse");
  }
  const uint64_t p = h.state().parameter_floats(), o = h.state().optimizer_state_floats();
  const uint64_t expected = fixed + header_len + (p + o) * sizeof(float);
  if (p > data.size() || o > data.size() || data.size() != expected) {
    throw CheckpointError("truncated or padded: " + std::to_string(data.size()) + " bytes, the header says " +
                          std::to_string(expected));
  }
  if (crc_of(data.data(), data.size() - 4) != stored_crc) throw CheckpointError("corrupt (CRC-32 mismatch)");
  Checkpoint c;
  c.state.header = h.state();
  c.view = h.view();
  c.node_id = h.node_id();
  c.test_accuracy = h.test_accuracy();
  const char* floats = data.data() + sizeof kMagic + 4 + header_len;
  // Copied bytewise, not memcpy'd: an empty vector's data() may be null
  // (plain SGD keeps no optimizer state), and memcpy from or to null is
  // undefined even for 0 bytes (UBSan caught it).
  c.state.params.resize(p);
  c.state.optimizer.resize(o);
  std::copy_n(floats, p * sizeof(float), reinterpret_cast<char*>(c.state.params.data()));
  std::copy_n(floats + p * sizeof(float), o * sizeof(float),
              reinterpret_cast<char*>(c.state.optimizer.data()));
  return c;
}

std::vector<fs::path> list_checkpoints(const fs::path& dir) {
  static const std::regex name(R"(ckpt-[0-9]{12}\.gsck)");
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && std::regex_match(e.path().filename().string(), name))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() > b.filename(); });
  return out;
}

std::optional<Checkpoint> load_newest_checkpoint(const fs::path& dir,
                                                 const std::function<void(const std::string&)>& skipped) {
  for (const auto& path : list_checkpoints(dir)) {
    try {
      return read_checkpoint(path);
    } catch (const CheckpointError& e) {
      skipped(path.string() + ": " + e.what());
    }
  }
  return std::nullopt;
}

Checkpointer::Checkpointer(CheckpointOptions options, std::string node_id,
                           std::function<void(Checkpoint&)> describe)
    : options_(std::move(options)), node_id_(std::move(node_id)), describe_(std::move(describe)) {
  thread_ = std::thread([this] { loop(); });
}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Checkpoint Checkpointer::complete(ReplicaState state) {
  seal(state);
  Checkpoint c;
  c.state = std::move(state);
  c.node_id = node_id_;
  if (describe_) describe_(c);
  return c;
}

void Checkpointer::at_step(uint64_t round, const std::function<ReplicaState()>& capture) {
  if (options_.every == 0 || round == 0 || round % options_.every != 0) return;
  {
    std::unique_lock lock(mutex_);
    if (wait_) cv_.wait(lock, [&] { return !busy_ && !pending_; });
    if (busy_ || pending_) {
      skipped_.fetch_add(1);
      spdlog::warn("node '{}': checkpoint of round {} skipped: the previous one is still being written",
                   node_id_, round);
      return;
    }
  }
  Checkpoint c = complete(capture());
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(c);
  }
  cv_.notify_all();
}

void Checkpointer::write_now(ReplicaState state) {
  Checkpoint c = complete(std::move(state));
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return !busy_ && !pending_; });
  write_unlocked(lock, c);
}

void Checkpointer::write_unlocked(std::unique_lock<std::mutex>& lock, const Checkpoint& c) {
  busy_ = true;
  lock.unlock();
  write(c);
  lock.lock();
  busy_ = false;
  cv_.notify_all();
}

void Checkpointer::write(const Checkpoint& c) {
  try {
    const fs::path path = write_checkpoint(options_.dir, c, options_.keep);
    written_.fetch_add(1);
    spdlog::debug("node '{}': checkpoint {}", node_id_, path.string());
  } catch (const std::exception& e) {
    // A full disk must not stop training; the previous checkpoints stay.
    spdlog::error("node '{}': {}; training goes on, the previous checkpoints are kept", node_id_, e.what());
  }
}

void Checkpointer::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || pending_.has_value(); });
    if (!pending_) return;  // stopping, nothing left
    Checkpoint c = std::move(*pending_);
    pending_.reset();
    write_unlocked(lock, c);
  }
}

}  // namespace gossipd::daemon
