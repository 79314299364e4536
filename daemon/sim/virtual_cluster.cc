#include "daemon/sim/virtual_cluster.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/cmd/run_command.h"
#include "daemon/cmd/run_flags.h"
#include "daemon/member/member.h"
#include "protocol/transport/inproc_transport.h"

namespace gossipd::daemon {
namespace {

// What one member tells the cluster: its control records (--control-out),
// as gossipd run writes them.
class VirtualEvents : public MemberEvents {
 public:
  explicit VirtualEvents(const std::string& control_out) : control_(control_out) {}
  void listening(const proto::ControlRecord& r) override { control_.write(r); }
  void ended(const proto::ControlRecord& r, const std::vector<std::string>&) override { control_.write(r); }

 private:
  ControlOut control_;
};

struct VirtualMember {
  RunCommandLine line;
  std::unique_ptr<VirtualEvents> events;
  std::unique_ptr<Member> member;
};

}  // namespace

VirtualRun run_virtual_cluster(const std::vector<std::vector<std::string>>& args, std::stop_token stop,
                               const VirtualProgress& progress,
                               std::shared_ptr<const protocol::ModelledLosses> losses) {
  // Outlives the members (declared first); holds what a member sends to one
  // not yet up, as gossipd run's sockets do.
  protocol::InProcHub hub(protocol::InProcHub::Absent::kHold);
  hub.set_losses(std::move(losses));
  std::vector<std::unique_ptr<VirtualMember>> members;
  for (const auto& a : args) {
    auto m = std::make_unique<VirtualMember>();
    parse_run_args(m->line, a);
    m->events = std::make_unique<VirtualEvents>(m->line.options.control_out);
    m->member =
        std::make_unique<Member>(m->line.options, m->line.modes.find(m->line.options.algo), *m->events, &hub);
    members.push_back(std::move(m));
  }
  std::stop_source all;
  const std::stop_callback forward(stop, [&] { all.request_stop(); });
  std::mutex mu;
  std::condition_variable cv;
  size_t ended = 0;
  VirtualRun run;
  {
    std::vector<std::jthread> threads;
    for (auto& m : members) {
      threads.emplace_back([&, vm = m.get()] {
        std::string error;
        try {
          vm->member->run(all.get_token());
        } catch (const std::exception& e) {
          error = e.what();
        }
        std::lock_guard lock(mu);
        ++ended;
        if (!error.empty() && run.failure.empty()) {
          run.failure = vm->line.options.id + ": " + error;
          all.request_stop();  // the others would only wait for it until their timeouts
        }
        cv.notify_all();
      });
    }
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(500), [&] { return ended == members.size(); })) {
      uint64_t round = UINT64_MAX;
      uint32_t epoch = UINT32_MAX;
      for (const auto& m : members) {
        const proto::Status st = m->member->state().snapshot();
        round = std::min(round, st.state() == "done" ? UINT64_MAX : st.round());
        epoch = std::min(epoch, st.state() == "done" ? UINT32_MAX : st.epoch());
      }
      lock.unlock();
      if (progress) progress(round, epoch);
      lock.lock();
    }
  }
  run.stopped = stop.stop_requested();
  return run;
}

}  // namespace gossipd::daemon
