#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/plan/link_model.h"
#include "trainer/model.h"

namespace CLI {
class App;
}

namespace gossipd::daemon {

// What every plan subcommand reads: the model by name and widths, and the
// link; both throw UsageError prefixed with `what` ("plan grid").
std::unique_ptr<trainer::Model> plan_model(const std::string& what, const std::string& name,
                                           const std::vector<int>& hidden);
LinkModel plan_link(const std::string& what, const std::string& bandwidth, double latency_us);

// Adds `plan`, the parent of every mode's planner command (`plan grid`,
// `plan pipeline`, `plan sparse`: each in its mode's folder); returns it.
CLI::App* add_plan_command(CLI::App& app);

}  // namespace gossipd::daemon
