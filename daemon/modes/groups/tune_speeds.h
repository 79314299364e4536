#pragma once

#include <string>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// gossipctl tune's view of the machines (issue 58): each member's compute
// per step, read from a synchronous probe's records (each step's time less
// its communication: in a synchronous step the wait for the slowest member
// is communication, so what is left is the member's own; the time between
// steps, start-up and evaluations, is left out), and the order in
// which the compute groups take the members (--compute-group-order): the
// fastest first, so that g groups of N/g consecutive members put members of
// like speed together and a slow member holds back only its own group.
struct MemberSpeeds {
  std::vector<double> compute_ms;  // worker i's mean compute per step
  // Member ids fastest first; empty where the members are of one speed
  // (the slowest within kSameSpeed of the fastest): groups by rank.
  std::vector<std::string> order;
};

// Slowest over fastest compute at or below which members count as equal.
constexpr double kSameSpeed = 1.25;

// From each worker's records file (worker i's at files[i], id "w<i>"):
// its last record that timed a step.
MemberSpeeds member_speeds(const std::vector<std::string>& files);

// Whether every worker's records (read_epoch_records) hold one that timed
// a step: the probe that learns the speeds does not stop before (a member
// that evaluates later than the one that reaches the goal would read as 0 ms).
bool every_member_timed(const std::vector<std::vector<proto::EpochRecord>>& workers);

// "w0,w2,w1,w3" (the flag's value).
std::string order_flag(const MemberSpeeds& s);

// One line for the report: the compute per member and the groups formed.
std::string describe_speeds(const MemberSpeeds& s, size_t groups);

}  // namespace gossipd::daemon
