#include "daemon/sim/modelled_metrics.h"

#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;

void modelled(proto::EpochRecord& r, double clock, double waited) {
  r.set_wall_seconds(clock);
  r.set_train_seconds(clock);
  const double rounds = static_cast<double>(r.round());
  r.set_rounds_per_second(clock > 0 ? rounds / clock : 0);
  r.set_comm_ms_per_round(rounds > 0 ? 1e3 * waited / rounds : 0);
}

}  // namespace

void write_modelled_metrics(const std::vector<std::string>& files, const std::vector<std::string>& members,
                            const ModelledTimes& t) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < members.size(); ++i) index[members[i]] = i;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  for (size_t k = 0; k < files.size(); ++k) {
    const size_t m = index.at("w" + std::to_string(k));
    const std::string wall = fs::path(files[k]).replace_extension(".wall.jsonl").string();
    std::error_code ec;
    fs::rename(files[k], wall, ec);
    if (ec) throw std::runtime_error("cannot keep " + files[k] + " as " + wall + ": " + ec.message());
    std::ofstream out(files[k], std::ios::trunc);
    for (proto::EpochRecord r : read_epoch_records(wall)) {
      const size_t at = std::min<size_t>(r.round(), t.clocks.size());
      modelled(r, at > 0 ? t.clocks[at - 1][m] : 0, at > 0 ? t.waits[at - 1][m] : 0);
      std::string line;
      (void)google::protobuf::util::MessageToJsonString(r, &line, opts);
      out << line << '\n';
    }
    if (!out.flush()) throw std::runtime_error("cannot write " + files[k]);
  }
}

}  // namespace gossipd::daemon
