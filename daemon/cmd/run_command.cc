#include "daemon/cmd/run_command.h"

#include <cstdio>
#include <optional>

#include "daemon/config/cli.h"
#include "daemon/member/member.h"
#include "daemon/observe/metrics_log.h"

namespace gossipd::daemon {
namespace {

// gossipd run's lines on stdout, and one JSON line per record in
// --control-out (written and flushed whole, so a reader sees whole lines).
class RunPrinter : public MemberEvents {
 public:
  explicit RunPrinter(const RunOptions& o) : o_(o) {}

  void config_ok(const std::string& algo, const std::string& summary, uint64_t resumes_at) override {
    std::printf("gossipd run: configuration OK (%s, %s%s)\n", algo.c_str(), summary.c_str(),
                resumes_at ? (", resumes at round " + std::to_string(resumes_at)).c_str() : "");
  }

  void listening(const proto::ControlRecord& r) override {
    const std::string where =
        r.joining() ? "joining" : "rank " + std::to_string(r.rank()) + "/" + std::to_string(r.members());
    std::printf("gossipd run: id %s %s listening on %s", r.id().c_str(), where.c_str(), r.endpoint().c_str());
    if (r.http_port()) std::printf(", http on port %u", r.http_port());
    std::printf("\n");
    std::fflush(stdout);
    write(r);
  }

  void downloaded(uint64_t round, double accuracy) override {
    line("%s downloaded the state at round %llu: test accuracy %.4f", o_.id.c_str(),
         static_cast<unsigned long long>(round), accuracy);
  }
  void joined(const std::string& contact, uint64_t since, uint64_t total, uint64_t epoch) override {
    line("%s joined through %s: enters at round %llu of %llu (epoch %llu)", o_.id.c_str(), contact.c_str(),
         static_cast<unsigned long long>(since), static_cast<unsigned long long>(total),
         static_cast<unsigned long long>(epoch));
  }
  void left_checkpoint(uint64_t round) override {
    line("%s left its checkpoint of round %llu for the cluster's newer state", o_.id.c_str(),
         static_cast<unsigned long long>(round));
  }
  void resumed(uint64_t round, uint32_t epoch, double accuracy) override {
    line("%s resumes from its checkpoint of round %llu (epoch %u, test accuracy %.4f)", o_.id.c_str(),
         static_cast<unsigned long long>(round), epoch, accuracy);
  }
  void evaluated(const proto::EpochRecord& r, int epochs) override {
    if (o_.quiet) return;
    std::printf("[%s] epoch %g/%d  loss %.4f  train_acc %.4f  test_acc %.4f  round %llu  %.1f s\n",
                o_.id.c_str(), r.progress(), epochs, r.loss(), r.train_accuracy(), r.test_accuracy(),
                static_cast<unsigned long long>(r.round()), r.wall_seconds());
    std::fflush(stdout);
  }
  void ended(const proto::ControlRecord& r, const std::vector<std::string>& mode_lines) override;
  void rejoining(const std::string& contact, int rejoin, int of) {
    line("%s joins its cluster again through %s, its state downloaded anew (rejoin %d of %d, --rejoin)",
         o_.id.c_str(), contact.c_str(), rejoin, of);
  }

 private:
  template <class... A>
  void line(const char* format, A... args) {
    std::printf("gossipd run: ");
    std::printf(format, args...);
    std::printf("\n");
    std::fflush(stdout);
  }
  void write(const proto::ControlRecord& r) { control_.write(r); }

  const RunOptions& o_;
  ControlOut control_{o_.control_out};
};

void RunPrinter::ended(const proto::ControlRecord& r, const std::vector<std::string>& mode_lines) {
  const proto::InjectedFaults& f = r.faults();
  if (r.event() == "cut_off") {
    line("%s cut off from its cluster at round %llu", r.id().c_str(),
         static_cast<unsigned long long>(r.round()));
  } else if (r.event() == "stopped") {
    line("%s stopped by signal at round %llu", r.id().c_str(), static_cast<unsigned long long>(r.round()));
  } else if (r.event() == "done") {
    if (f.sent() > 0) {
      line(
          "%s faults injected: %llu of %llu messages dropped, %llu duplicated, %llu reordered, %llu "
          "retransmitted",
          r.id().c_str(), static_cast<unsigned long long>(f.dropped()),
          static_cast<unsigned long long>(f.sent()), static_cast<unsigned long long>(f.duplicated()),
          static_cast<unsigned long long>(f.reordered()), static_cast<unsigned long long>(f.retransmitted()));
    }
    for (const std::string& l : mode_lines) line("%s %s", r.id().c_str(), l.c_str());
    line("%s done: round %llu test_accuracy %.4f param_hash %s gossip_bytes_sent %llu", r.id().c_str(),
         static_cast<unsigned long long>(r.round()), r.status().test_accuracy(), r.param_hash().c_str(),
         static_cast<unsigned long long>(r.status().bytes_sent()));
  }
  write(r);  // a failure's one line is main's
}

// "" when a member cut off from its cluster enters it again by itself;
// otherwise the end of its one line: why not, and what to do.
std::string why_not_rejoin(const CutOff& cut, const RunOptions& o, const Mode& mode,
                           const std::stop_source& stop) {
  const std::string restart =
      cut.contacts().empty() ? ""
                             : "; restart it with --join " + cut.contacts().front() + " to enter it again";
  if (stop.stop_requested()) return restart;
  if (!mode.accepts_joins()) return "; --algo " + o.algo + " takes no joiners: restart the cluster";
  if (cut.contacts().empty()) return "; no member is left to join through";
  if (o.rejoined >= o.rejoin) {
    return o.rejoin == 0 ? restart
                         : restart + " (it did " + std::to_string(o.rejoined) + " times already, --rejoin " +
                               std::to_string(o.rejoin) + ")";
  }
  return "";
}

}  // namespace

void ControlOut::write(const proto::ControlRecord& record) {
  if (path_.empty()) return;
  if (!out_) out_.emplace(path_);
  out_->write(record);
}

int run_run_command(const RunOptions& options, ModeSet& modes, const ModeFlags& flags) {
  flags.check_given(options.algo, options);
  set_blas_threads(options.train.threads);  // process-wide: the holder's, not the member's
  std::stop_source stop;
  SignalWatcher signals(stop);
  RunPrinter printer(options);
  const Mode& mode = modes.find(options.algo);
  RunOptions current = options;
  for (;;) {
    std::optional<RunOptions> next;
    {
      Member member(current, mode, printer);
      try {
        member.run(stop.get_token());
        return kExitOk;
      } catch (const CutOff& cut) {
        // Its addresses are free again once the member is gone (end of this scope).
        if (const std::string why = why_not_rejoin(cut, current, mode, stop); !why.empty())
          throw DaemonError(std::string(cut.what()) + why);
        next = member.rejoin_options(cut);
      } catch (const NoMemberAnswered& e) {
        if (current.rejoined == 0) throw;
        throw DaemonError("node '" + current.id +
                          "' was cut off from its cluster and could not join it again: " + e.what());
      }
    }
    current = std::move(*next);
    printer.rejoining(current.join.front(), current.rejoined, current.rejoin);
  }
}

}  // namespace gossipd::daemon
