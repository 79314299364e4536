#include "daemon/modes/sparse/sparse_tools.h"

#include <CLI/CLI.hpp>

#include "daemon/modes/sparse/sparse_bench.h"
#include "daemon/modes/sparse/sparse_command.h"
#include "daemon/modes/sparse/sparse_plan_command.h"

namespace gossipd::daemon {
namespace {

class SparseTools : public ModeTools {
 public:
  void add(ToolParents& parents) override {
    plan_ = add_plan_sparse(parents.plan, plan_options_);
    sparse_ = add_sparse_commands(parents.app, generate_, infer_);
    bench_ = add_sparse_bench(parents.bench, bench_options_);
  }
  std::optional<int> run() override {
    if (was_parsed(plan_)) return run_plan_sparse(plan_options_);
    if (was_parsed(sparse_)) return run_sparse_command(*sparse_, generate_, infer_);
    if (was_parsed(bench_)) return run_sparse_bench(bench_options_);
    return std::nullopt;
  }

 private:
  PlanSparseOptions plan_options_;
  SparseGenerateOptions generate_;
  SparseInferOptions infer_;
  SparseBenchOptions bench_options_;
  CLI::App* plan_ = nullptr;
  CLI::App* sparse_ = nullptr;
  CLI::App* bench_ = nullptr;
};

}  // namespace

std::unique_ptr<ModeTools> make_sparse_tools() { return std::make_unique<SparseTools>(); }

}  // namespace gossipd::daemon
