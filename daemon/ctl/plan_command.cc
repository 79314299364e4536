#include "daemon/ctl/plan_command.h"

#include <CLI/CLI.hpp>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "trainer/models.h"

namespace gossipd::daemon {

std::unique_ptr<trainer::Model> plan_model(const std::string& what, const std::string& name,
                                           const std::vector<int>& hidden) {
  trainer::ModelOptions mo;
  mo.name = name;
  mo.hidden = hidden;
  try {
    return trainer::make_model(mo, 1);
  } catch (const std::invalid_argument& e) {
    throw UsageError(what + ": " + e.what());
  }
}

LinkModel plan_link(const std::string& what, const std::string& bandwidth, double latency_us) {
  LinkModel link;
  try {
    link.bytes_per_s = parse_bandwidth(bandwidth);
  } catch (const std::invalid_argument& e) {
    throw UsageError(what + ": --bandwidth: " + e.what());
  }
  link.latency_s = latency_us * 1e-6;
  return link;
}

CLI::App* add_plan_command(CLI::App& app) {
  CLI::App* plan =
      app.add_subcommand("plan", "Predict what a synchronous mode's layouts move and cost per step");
  plan->require_subcommand(1);
  return plan;
}

}  // namespace gossipd::daemon
