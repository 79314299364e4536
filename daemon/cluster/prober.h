#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/cluster/probe_order.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// SWIM's failure detector as a state machine: this period's probe (its
// target, its number, whether its indirect probes went out, whether an ACK
// came) and the PINGs this member sends for others' PING_REQs. It sends
// nothing and reads no clock: each step is given the time and the members,
// and returns the messages to send; what an unanswered probe means (a
// suspicion, a slower period) is the caller's.
class Prober {
 public:
  using Clock = std::chrono::steady_clock;
  // A probe message to send: PING, ACK or PING_REQ, with its number and,
  // for PING_REQ and a relayed ACK, the member it is about.
  struct Send {
    proto::MessageType type = proto::PING;
    std::string to;
    uint64_t seq = 0;
    std::string target;
    size_t padding = 0;  // bytes of padding (--group auto's measuring PING and its ACK)
  };
  // How the probe of the period that ends went.
  enum class Outcome {
    kFree,        // none out (or failure detection is not armed): the next may go
    kAcked,       // answered, directly or through another member
    kWaiting,     // its indirect probes have until two periods have passed
    kUnanswered,  // no ACK, direct or relayed: `target` may have failed
  };
  struct End {
    Outcome outcome = Outcome::kFree;
    std::string target;
  };
  // The probe due for its indirect probes.
  struct Indirect {
    std::string target;
    uint64_t seq = 0;
  };

  explicit Prober(uint64_t order_seed) : order_(order_seed) {}

  // The period's probe: a PING to the next of `peers` (ProbeOrder's;
  // `listed` says whether one drawn earlier is still a member), or nullopt
  // when there are none. The relays that expired are forgotten then.
  std::optional<Send> start(Clock::time_point now, const std::vector<std::string>& peers,
                            const std::function<bool(const std::string&)>& listed);
  // The period ends: how its probe went (`period`: the protocol period now;
  // `armed`: whether failure detection runs). The probe is over unless kWaiting.
  End end(Clock::time_point now, std::chrono::milliseconds period, bool armed);
  // The probe unanswered after `timeout`, now marked as probed indirectly
  // (once); nullopt when there is none such.
  std::optional<Indirect> indirect(Clock::time_point now, std::chrono::milliseconds timeout);
  // When the probe out is due for its indirect probes; nullopt when none is.
  std::optional<Clock::time_point> indirect_at(std::chrono::milliseconds timeout) const;
  // An ACK `seq` from `sender` about `target` ("" for the sender itself):
  // the ACK to pass on when it answers a PING sent for another's PING_REQ;
  // otherwise it answers this member's probe, or nothing.
  std::optional<Send> ack(uint64_t seq, const std::string& sender, const std::string& target);
  // A PING_REQ `seq` from `requester` about `target`: the PING sent for it,
  // its ACK relayed until `expires`.
  Send relay(const std::string& requester, uint64_t seq, const std::string& target,
             Clock::time_point expires);
  // Forgets the probe and the relays (this member did not run: their
  // ACKs may wait here unread).
  void reset();

 private:
  struct Probe {
    std::string target;
    uint64_t seq = 0;
    Clock::time_point sent;
    bool indirect = false;
    bool acked = false;
  };
  // A PING this member sent for another's PING_REQ: whose, and its number.
  struct Relay {
    std::string requester;
    uint64_t seq = 0;
    Clock::time_point expires;
  };

  ProbeOrder order_;
  std::optional<Probe> probe_;
  std::map<uint64_t, Relay> relays_;  // this member's PING number -> the PING_REQ it serves
  uint64_t next_seq_ = 1;
};

}  // namespace gossipd::daemon
