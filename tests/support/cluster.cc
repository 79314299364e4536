#include "tests/support/cluster.h"

#include <regex>

#include "daemon/ctl/compare_hosts.h"
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
    procs_.push_back(std::make_unique<Process>(argv));
    argv_.push_back(argv);
  }
}

std::string Cluster::endpoint(const std::string& id) const {
  const auto it = tcp_.find(id);
  return it != tcp_.end() ? it->second : "ipc://" + dir_.file(id + ".sock");
}

int Cluster::restart(int i) {
  const auto argv = argv_.at(static_cast<size_t>(i));
  procs_.push_back(std::make_unique<Process>(argv));
  argv_.push_back(argv);
  return size() - 1;
}

int Cluster::join(const std::string& new_id, int via, const std::vector<std::string>& extra) {
  std::vector<std::string> argv{
      bin("gossipd"),    "run",    "--id",        new_id,         "--listen", endpoint(new_id), "--join",
      endpoint(id(via)), "--http", "127.0.0.1:0", "--cluster-id", "test"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  procs_.push_back(std::make_unique<Process>(argv));
  argv_.push_back(argv);
  return size() - 1;
}

Cluster::~Cluster() {
  procs_.clear();  // kills and reaps, before dir_ goes
}

uint16_t Cluster::http_port(int i) { return testing::http_port(proc(i)); }

uint16_t http_port(Process& p) {
  static const std::regex re("http on port ([0-9]+)");
  std::smatch m;
  std::string out;
  wait_until(
      [&] {
        out = p.out();
        return std::regex_search(out, m, re) || p.wait(std::chrono::milliseconds(0));
      },
      std::chrono::seconds(30));
  return std::regex_search(out, m, re) ? static_cast<uint16_t>(std::stoi(m[1])) : 0;
}

}  // namespace gossipd::testing
