#include "daemon/member/run_files.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "daemon/config/cli.h"
#include "trainer/durable_file.h"

namespace gossipd::daemon {

namespace {

std::string share(const std::string& layout) { return layout.empty() ? "a whole replica" : layout; }

}  // namespace

std::optional<Checkpoint> find_resume_point(const RunOptions& o, const StateLayout& expected) {
  if (o.checkpoint_dir.empty()) return std::nullopt;
  std::error_code ec;
  std::filesystem::create_directories(o.checkpoint_dir, ec);
  if (ec) throw UsageError("--checkpoint-dir " + o.checkpoint_dir + ": " + ec.message());
  auto c = load_newest_checkpoint(o.checkpoint_dir, [&](const std::string& why) {
    spdlog::warn("node '{}': checkpoint {}; trying the previous one", o.id, why);
  });
  if (!c) return std::nullopt;
  const std::string where = "the checkpoints in " + o.checkpoint_dir;
  if (c->node_id != o.id) {
    throw UsageError(where + " belong to worker '" + c->node_id + "', not '" + o.id +
                     "': give every worker its own --checkpoint-dir");
  }
  const proto::StateHeader& h = c->state.header;
  if (h.algo() != o.algo)
    throw UsageError(where + " are of --algo " + h.algo() + ": use it, or another --checkpoint-dir");
  if (h.layout() != expected.name) {
    throw UsageError(
        where + " hold " + share(h.layout()) + ", this worker is " + share(expected.name) +
        ": restart with the flags that place it (--peers, --grid; --stages, --replicas, --partition) they "
        "were written with, or use another --checkpoint-dir");
  }
  if (h.parameter_floats() != expected.params || h.optimizer_state_floats() != expected.optimizer) {
    throw UsageError(
        where + " hold " + std::to_string(h.parameter_floats()) + " parameters and " +
        std::to_string(h.optimizer_state_floats()) + " optimizer floats, this worker " +
        std::to_string(expected.params) + " and " + std::to_string(expected.optimizer) +
        ": use the --model, --hidden and --optimizer they were written with, or another --checkpoint-dir");
  }
  return c;
}

void write_params(const std::string& path, std::span<const float> params) {
  trainer::write_file_durably(
      path, std::string_view(reinterpret_cast<const char*>(params.data()), params.size_bytes()));
}

}  // namespace gossipd::daemon
