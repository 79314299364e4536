// gossipd: the worker daemon.
#include <google/protobuf/stubs/logging.h>

#include <CLI/CLI.hpp>

#include "daemon/cmd/run_command.h"
#include "daemon/cmd/run_flags.h"
#include "daemon/cmd/train_command.h"
#include "daemon/config/cli.h"

int main(int argc, char** argv) {
  gossipd::daemon::tune_allocator();
  // libprotobuf would print an unthrottled line per malformed string field a
  // stranger sends; the validator already counts and rate-limits those.
  google::protobuf::SetLogHandler(nullptr);
  using namespace gossipd::daemon;
  RunCommandLine run;
  // Every registered mode named, as `gossipd run --help` describes each.
  std::string modes;
  for (const auto& name : run.modes.names()) modes += (modes.empty() ? "" : ", ") + name;
  CLI::App app("gossipd: decentralized training worker; modes (gossipd run --algo): " + modes, "gossipd");
  app.require_subcommand(1);
  app.set_version_flag("--version", version_line("gossipd"));
  TrainCommandOptions train;
  CLI::App* train_cmd = add_train_command(app, train);
  add_run_command(app, run);
  return run_cli(app, argc, argv, [&]() -> int {
    if (train_cmd->parsed()) return run_train_command(train);
    if (run.command->parsed()) return run_run_command(run.options, run.modes, *run.flags);
    return kExitUsage;
  });
}
