#include "daemon/worker/spread_resume.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "daemon/cluster/checkpoint.h"
#include "daemon/config/cli.h"
#include "daemon/worker/round_floats.h"
#include "protocol/collectives/collectives.h"

namespace gossipd::daemon {
namespace {

// ckpt-000000001234.gsck -> 1234 (list_checkpoints only lists such names).
uint64_t round_of(const std::filesystem::path& file) {
  return std::stoull(file.filename().string().substr(5, 12));
}

std::string describe(const std::vector<std::string>& members,
                     const std::vector<std::vector<uint64_t>>& rounds) {
  std::string s;
  for (size_t r = 0; r < members.size(); ++r) {
    s += (r ? "; " : "") + members[r] + ":";
    if (rounds[r].empty()) s += " none";
    for (uint64_t round : rounds[r]) s += " " + std::to_string(round);
  }
  return s;
}

}  // namespace

std::vector<uint64_t> resumable_rounds(const std::filesystem::path& dir, uint64_t current) {
  std::vector<uint64_t> rounds;
  if (current > 0) rounds.push_back(current);
  if (dir.empty() || current == 0) return rounds;
  for (const auto& file : list_checkpoints(dir)) {  // newest first
    if (rounds.size() == kResumeRounds) break;
    if (const uint64_t r = round_of(file); r < current) rounds.push_back(r);
  }
  return rounds;
}

std::optional<uint64_t> common_round(const std::vector<std::vector<uint64_t>>& rounds) {
  if (std::all_of(rounds.begin(), rounds.end(), [](const auto& r) { return r.empty(); })) return 0;
  if (rounds.empty()) return 0;
  std::set<uint64_t> common(rounds[0].begin(), rounds[0].end());
  for (const auto& r : rounds) {
    std::set<uint64_t> both;
    for (uint64_t round : r) {
      if (common.count(round)) both.insert(round);
    }
    common.swap(both);
  }
  if (common.empty()) return std::nullopt;
  return *common.rbegin();
}

uint64_t agree_on_round(protocol::Group& all, const std::vector<uint64_t>& mine) {
  const size_t slots = 2 * kResumeRounds, cells = all.size();
  std::vector<float> table(cells * slots, 0.0f);  // round + 1 per slot, 0 for none
  for (size_t k = 0; k < mine.size() && k < kResumeRounds; ++k) {
    const auto f = round_to_floats(mine[k] + 1);
    std::copy(f.begin(), f.end(), table.begin() + static_cast<ptrdiff_t>(all.rank() * slots + 2 * k));
  }
  protocol::Allgather(all, table, std::vector<size_t>(cells, slots)).run();
  std::vector<std::vector<uint64_t>> rounds(cells);
  for (size_t c = 0; c < cells; ++c) {
    for (size_t k = 0; k < kResumeRounds; ++k) {
      if (const uint64_t r = round_from_floats(&table[c * slots + 2 * k]); r > 0) rounds[c].push_back(r - 1);
    }
  }
  if (const std::optional<uint64_t> round = common_round(rounds)) return *round;
  throw UsageError("the processes have no checkpoint of one round in common (" +
                   describe(all.members(), rounds) +
                   "): restart every process with the --checkpoint-dir it wrote, or move every process's "
                   "checkpoints away to start over");
}

void abandon_after(const std::filesystem::path& dir, uint64_t round) {
  for (const auto& file : list_checkpoints(dir)) {
    if (round_of(file) > round) std::filesystem::rename(file, file.string() + ".abandoned");
  }
}

ReplicaState checkpoint_to_go_back_to(const std::filesystem::path& dir, uint64_t round, const std::string& id,
                                      const std::string& layout, size_t params) {
  const std::filesystem::path file = dir / checkpoint_name(round);
  const std::string why = "node '" + id + "': going back to round " + std::to_string(round) +
                          ", the newest every process has a checkpoint of: " + file.string();
  Checkpoint back;
  try {
    back = read_checkpoint(file);
  } catch (const CheckpointError& e) {
    throw UsageError(why + ": " + e.what());
  }
  if (back.state.header.layout() != layout || back.state.params.size() != params)
    throw UsageError(why + " is not this process's share (" + back.state.header.layout() + ")");
  abandon_after(dir, round);
  std::printf(
      "gossipd run: %s goes back to its checkpoint of round %llu, the newest every process has (newer ones "
      "renamed *.abandoned)\n",
      id.c_str(), static_cast<unsigned long long>(round));
  std::fflush(stdout);
  return std::move(back.state);
}

std::optional<ReplicaState> state_to_go_back_to(protocol::Group& all, const std::filesystem::path& dir,
                                                uint64_t mine, const std::string& id,
                                                const std::string& layout, size_t params) {
  const uint64_t round = agree_on_round(all, resumable_rounds(dir, mine));
  if (round == mine) return std::nullopt;
  return checkpoint_to_go_back_to(dir, round, id, layout, params);
}

}  // namespace gossipd::daemon
