#include "daemon/hosted/hosted_member.h"

#include "daemon/config/cli.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

// What the member tells its host: where it listens and how it entered.
class HostedMember::Events : public MemberEvents {
 public:
  void listening(const proto::ControlRecord& r) override {
    std::lock_guard lock(mu_);
    info_.id = r.id();
    info_.endpoint = r.endpoint();
    info_.http_port = r.http_port();
  }
  void joined(const std::string&, uint64_t since_round, uint64_t, uint64_t) override {
    std::lock_guard lock(mu_);
    info_.joined = true;
    info_.start_round = since_round - 1;
  }
  void resumed(uint64_t round, uint32_t, double) override {
    std::lock_guard lock(mu_);
    info_.start_round = round;
  }
  HostedInfo info() const {
    std::lock_guard lock(mu_);
    return info_;
  }

 private:
  mutable std::mutex mu_;
  HostedInfo info_;
};

HostedMember::HostedMember(const std::vector<std::string>& args, HostedLayout layout)
    : events_(std::make_unique<Events>()) {
  parse_run_args(line_, args);
  mode_ = std::make_unique<HostedMode>(line_.modes.find(line_.options.algo), std::move(layout), rendezvous_,
                                       stop_.get_token(), [this](HostedArena a) {
                                         std::lock_guard lock(mu_);
                                         arena_ = a;
                                         loaded_ = true;
                                         cv_.notify_all();
                                       });
  member_ = std::make_unique<Member>(line_.options, *mode_, *events_);
  thread_ = std::jthread([this] { run(); });
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return loaded_ || !failure_.empty(); });
  if (!loaded_) {
    lock.unlock();
    close();
    throw UsageError(failure_);
  }
}

HostedMember::~HostedMember() { close(); }

void HostedMember::run() {
  std::string error;
  bool timed_out = false;
  try {
    member_->run(stop_.get_token());
  } catch (const protocol::PeerTimeout& e) {
    error = e.what();
    timed_out = true;
  } catch (const CutOff& cut) {
    // gossipd run joins again by itself (--rejoin); a host's model and
    // optimizer are the host's, so the host decides.
    error = std::string(cut.what()) + "; a Python member does not join again by itself" +
            (cut.contacts().empty() ? std::string()
                                    : ": make a new Worker with join=\"" + cut.contacts().front() +
                                          "\" and sync_state() to enter the cluster again");
  } catch (const std::exception& e) {
    error = e.what();
  }
  rendezvous_.ended(error, timed_out);
  std::lock_guard lock(mu_);
  if (!loaded_) failure_ = error.empty() ? "the member ended before it loaded" : error;
  cv_.notify_all();
}

HostedInfo HostedMember::wait_ready() {
  // The member's own start-up timeout names the peers that never came;
  // the host waits a little longer so that it hears that error.
  rendezvous_.wait_ready(std::chrono::milliseconds(line_.options.startup_timeout_ms) +
                         std::chrono::seconds(5));
  return info();
}

HostedInfo HostedMember::info() const { return events_->info(); }

uint64_t HostedMember::round() const { return member_->replica().round(); }

bool HostedMember::one_replica() const { return mode_->one_replica(); }

std::chrono::milliseconds HostedMember::step_timeout() const {
  return std::chrono::milliseconds(2 * line_.options.timeout_ms + eviction_bound_ms(line_.options) +
                                   line_.options.segment_deadline_ms);
}

uint32_t HostedMember::finish() {
  // The average waits --timeout-ms for the others; the leave after it is bounded as close()'s.
  rendezvous_.finish(step_timeout() + std::chrono::milliseconds(line_.options.timeout_ms));
  close();
  return member_->state().snapshot().final_average_members();
}

void HostedMember::close() {
  stop_.request_stop();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace gossipd::daemon
