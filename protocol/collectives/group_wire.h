#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/collectives/data_link.h"

namespace gossipd::protocol {

class DataListener;
class Group;

// A group's direct connections (one DataLink per peer it talks to), made on
// first use and driven by the calling thread: no other thread touches a
// payload on its way (MPI's TCP transport design). Connections are per group,
// so groups used by different threads at once never share one.
//
// Making a connection (rendezvous), on the first frame to or from a peer: of
// the two ranks, the lower announces a fresh nonce and its data port to the
// higher over the control channel (ZeroMQ, tag tags::User::kDataPath, seq =
// the group's tag); the higher connects to that port on the host of the
// lower's control endpoint and presents the nonce in its Hello; the lower's
// DataListener accepts only that. Neither side blocks on it: frames queue on
// a link until it is connected, and drive() completes pending connections
// with the rest of its work, so any order of first uses works.
class GroupWire {
 public:
  using Clock = std::chrono::steady_clock;

  explicit GroupWire(Group& group);
  ~GroupWire();
  GroupWire(const GroupWire&) = delete;
  GroupWire& operator=(const GroupWire&) = delete;

  // Queues a frame to `rank` (connecting first if needed) and writes what
  // the kernel takes now. `owner` keeps `data` alive until it is written.
  void send(size_t rank, wire::FrameHeader header, const void* data, std::shared_ptr<const void> owner);

  // Reads and writes on every link until done() holds: false when the
  // deadline passed first. Throws Aborted on the group's stop, PeerLost for
  // a link that broke (a reject is counted when the peer sent junk) or, when
  // done() waits on frames from `from_rank`, that the peer closed.
  static constexpr size_t kNoRank = static_cast<size_t>(-1);
  bool drive(const std::function<bool()>& done, Clock::time_point deadline, const std::string& during,
             size_t from_rank = kNoRank);

  // Removes and returns the first received frame from `rank` that `match`
  // accepts; frames `stale` says are dead are dropped (and counted) on the way.
  using Match = DataLink::Match;
  std::optional<InFrame> take(size_t rank, const Match& match, const Match& stale);

  // Drops what is queued to `rank` (a failed call): the owners are released
  // before this returns.
  void drop_queued(size_t rank);

  // Links whose frames go through shared memory both ways.
  size_t shared_links() const;

  // Nothing queued on any link: every frame is in the kernel.
  bool all_sent() const;

  // The link to `rank`, its connection started if it was not.
  DataLink& link(size_t rank);

 private:
  struct Pending {
    size_t rank = 0;
    uint64_t nonce = 0;  // the lower rank's; 0 on the higher (waits for the announcement)
    Clock::time_point announced;
    Clock::time_point since;  // when the link was asked for
  };
  DataListener& listener(size_t rank);  // throws PeerGone (naming `rank`) once the node is closed
  void announce(const Pending& p);
  bool advance(Pending& p, Clock::time_point now);  // true once connected
  Fd connect_announced(const std::string& peer, const Message& announcement);
  void progress(Clock::time_point now, const std::string& during);
  void wait(Clock::time_point deadline);                    // poll(2) on every link
  Clock::duration look_again(Clock::time_point now) const;  // while connections are pending
  void close_gracefully();                                  // the destructor's: FIN, then read to the peer's
  // Both on this host, sharing on, no injected faults (DataLink's shared memory).
  bool shares_memory(size_t rank) const;
  [[noreturn]] void lost(const DataLink& l, const std::string& during);

  Group& group_;
  std::vector<std::unique_ptr<DataLink>> links_;  // by rank
  std::vector<DataLink*> open_;                   // the connected ones
  std::vector<Pending> pending_;                  // the others
  std::vector<pollfd> fds_;                       // wait()'s, kept to spare an allocation per poll
};

}  // namespace gossipd::protocol
