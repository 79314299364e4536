#include "tests/support/cluster.h"

#include "daemon/ctl/compare_hosts.h"
#include "daemon/observe/metrics_log.h"
#include "tests/support/records.h"
#include "tests/support/wait.h"

namespace gossipd::testing {

Cluster::Cluster(int n, const std::vector<std::string>& extra,
                 const std::function<std::vector<std::string>(int)>& per_member, Listen listen) {
  if (listen == Listen::kTcp) {
    const std::vector<uint16_t> ports = daemon::free_ports(n);
    for (int i = 0; i < n; ++i)
      tcp_[id(i)] = "tcp://127.0.0.1:" + std::to_string(ports.at(static_cast<size_t>(i)));
  }
  std::string peers;
  for (int i = 0; i < n; ++i) peers.append(i ? "," : "").append(id(i)).append("=").append(endpoint(id(i)));
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> argv{bin("gossipd"), "run",           "--id",         id(i),
                                  "--listen",     endpoint(id(i)), "--peers",      peers,
                                  "--http",       "127.0.0.1:0",   "--cluster-id", "test"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (per_member) {
      auto own = per_member(i);
      argv.insert(argv.end(), own.begin(), own.end());
    }
    launch(argv, id(i));
  }
}

int Cluster::launch(const std::vector<std::string>& argv, const std::string& id) {
  controls_.push_back(dir_.file(id + "." + std::to_string(procs_.size()) + ".control"));
  std::vector<std::string> with_control = argv;
  with_control.insert(with_control.end(), {"--control-out", controls_.back()});
  procs_.push_back(std::make_unique<Process>(with_control));
  argv_.push_back(argv);
  return size() - 1;
}

std::string Cluster::endpoint(const std::string& id) const {
  const auto it = tcp_.find(id);
  return it != tcp_.end() ? it->second : "ipc://" + dir_.file(id + ".sock");
}

int Cluster::restart(int i) {
  const auto argv = argv_.at(static_cast<size_t>(i));
  return launch(argv, argv.at(3));  // argv: gossipd run --id ID ...
}

int Cluster::join(const std::string& new_id, int via, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{
      bin("gossipd"),    "run",    "--id",        new_id,         "--listen", endpoint(new_id), "--join",
      endpoint(id(via)), "--http", "127.0.0.1:0", "--cluster-id", "test"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return launch(argv, new_id);
}

Cluster::~Cluster() {
  procs_.clear();  // kills and reaps, before dir_ goes
}

uint16_t Cluster::http_port(int i) { return testing::http_port(proc(i), control_file(i)); }

std::optional<proto::ControlRecord> Cluster::end_record(int i) const {
  const auto records = daemon::read_control_records(control_file(i));
  if (records.empty() || records.back().event() == "listening") return std::nullopt;
  return records.back();
}

uint16_t http_port(Process& p, const std::string& control_file) {
  uint16_t port = 0;
  wait_until(
      [&] {
        for (const auto& r : daemon::read_control_records(control_file)) {
          if (r.event() == "listening") port = static_cast<uint16_t>(r.http_port());
        }
        return port != 0 || p.wait(std::chrono::milliseconds(0));
      },
      std::chrono::seconds(30));
  return port;
}

std::string why_not_evicted(Cluster& c, int bad) {
  const std::string id = Cluster::id(bad);
  for (int i = 0; i < c.size(); ++i) {
    const std::string log = c.proc(i).out() + c.proc(i).err();
    const auto has = [&](const std::string& text) { return log.find(text) != std::string::npos; };
    const std::string who = "worker " + std::to_string(i) + ": ";
    if (i == bad) {
      if (c.proc(i).exit_code() == 0) return who + "the evicted member ended well\n" + log;
      if (!has("member '" + id + "' was evicted as Byzantine in this run"))
        return who + "not refused\n" + log;
      continue;
    }
    if (c.proc(i).exit_code() != 0) return who + "failed\n" + log;
    const auto end = c.end_record(i);
    if (!end || end->event() != "done") return who + "no end record 'done'\n" + log;
    if (!has("member '" + id + "' evicted as Byzantine: named by "))
      return who + "no eviction logged\n" + log;
    for (const auto& m : end->status().members())
      if (m == id) return who + "ends with the evicted member in its view\n" + end->status().DebugString();
  }
  return "";
}

std::string why_not_named_alone(Cluster& c, int i, int bad, double min_accuracy) {
  const std::string log = c.proc(i).out() + c.proc(i).err();
  const std::string who = "worker " + std::to_string(i) + ": ";
  if (c.proc(i).exit_code() != 0) return who + "failed\n" + log;
  const auto end = c.end_record(i);
  if (!end || end->event() != "done") return who + "no end record 'done'\n" + log;
  if (named_byzantine(end->status()) != std::vector<std::string>{Cluster::id(bad)})
    return who + "its record names another set than {" + Cluster::id(bad) + "}\n" +
           end->status().DebugString();
  if (!log_names_byzantine(log, Cluster::id(bad))) return who + "its log does not name it\n" + log;
  if (end->status().test_accuracy() < min_accuracy)
    return who + "test accuracy " + std::to_string(end->status().test_accuracy()) + " below " +
           std::to_string(min_accuracy);
  return "";
}

}  // namespace gossipd::testing
