#include "daemon/cluster/share_download.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "daemon/cluster/state_transfer.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

struct Share {
  ShareSpan span;
  std::string donor;
  std::set<std::string> tried;
  Clock::time_point last;
  Clock::time_point asked;
  bool have_header = false;
  bool done = false;
  size_t received = 0;
  proto::StateHeader header;
};

class Downloader {
 public:
  Downloader(protocol::Node& node, const DownloadPlan& plan) : node_(node), plan_(plan), left_(plan.shares) {
    st_.params.assign(plan.param_floats, 0.0f);
    st_.optimizer.assign(plan.optimizer_floats, 0.0f);
    for (uint32_t i = 0; i < plan.shares; ++i) {
      Share s;
      s.span = share_span(plan.segment_lengths, plan.param_floats, plan.optimizer_floats, i, plan.shares);
      shares_.push_back(std::move(s));
    }
  }

  Download run(std::stop_token stop) {
    const auto start = Clock::now();
    for (uint32_t i = 0; i < shares_.size(); ++i) ask(i, plan_.donors[i % plan_.donors.size()]);
    while (left_ > 0) {
      auto m = node_.mailbox().pop(proto::STATE_CHUNK, next_stall(), stop);
      if (m) {
        take(*m);
        continue;
      }
      if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "downloading the state");
      reask_stalled();
    }
    Download d;
    d.state = assemble();
    for (const auto& s : shares_) d.donors.push_back(s.donor);
    d.reasked = reasked_;
    d.taken_over = taken_over_;
    d.wait_ms = wait_ms_;
    d.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return d;
  }

 private:
  void ask(uint32_t i, const std::string& donor) {
    Share& s = shares_[i];
    s.donor = donor;
    s.tried.insert(donor);
    s.last = s.asked = Clock::now();
    s.have_header = false;
    s.received = 0;
    if (plan_.ask) plan_.ask(donor, i);
  }

  Clock::time_point next_stall() const {
    auto t = Clock::time_point::max();
    for (const auto& s : shares_)
      if (!s.done) t = std::min(t, s.last + plan_.stall);
    return t;
  }

  void reask_stalled() {
    const auto now = Clock::now();
    for (uint32_t i = 0; i < shares_.size(); ++i) {
      Share& s = shares_[i];
      if (s.done || now < s.last + plan_.stall) continue;
      silent_.insert(s.donor);
      const std::string next = replacement(s);
      if (next.empty()) {
        throw StateTransferError("state download stalled: share " + std::to_string(i) + " of " +
                                 std::to_string(shares_.size()) + " got nothing from '" + s.donor + "' for " +
                                 std::to_string(plan_.stall.count()) +
                                 " ms and no other member is left to ask (are the members still up?)");
      }
      spdlog::warn("node '{}': share {} of the state got nothing from '{}' for {} ms: asking '{}'",
                   node_.id(), i, s.donor, plan_.stall.count(), next);
      ++reasked_;
      ask(i, next);
    }
  }

  // A member not yet asked for this share and not silent, serving the fewest
  // shares (a standby before a donor already busy); "" when none is left.
  std::string replacement(const Share& share) const {
    std::string best;
    size_t best_load = 0;
    for (const auto& d : plan_.donors) {
      if (share.tried.count(d) || silent_.count(d)) continue;
      const auto load = static_cast<size_t>(
          std::count_if(shares_.begin(), shares_.end(), [&](const Share& s) { return s.donor == d; }));
      if (best.empty() || load < best_load) {
        best = d;
        best_load = load;
      }
    }
    return best;
  }

  void take(const protocol::Message& m) {
    const proto::Envelope& e = m.envelope;
    if (e.chunk() >= shares_.size()) return;
    Share& s = shares_[e.chunk()];
    if (s.done || e.sender() != s.donor) return;  // a replaced donor's late stream, or a stranger's
    s.last = Clock::now();
    if (e.has_state_header()) {
      check_header(e.state_header(), s.donor);
      started_.insert(s.donor);
      s.header = e.state_header();
      s.have_header = true;
      wait_ms_ = std::max(wait_ms_, std::chrono::duration<double, std::milli>(s.last - s.asked).count());
      s.received = 0;
    } else if (s.have_header) {  // else: the tail of an earlier, abandoned stream
      copy_chunk(m, s);
    }
    if (s.have_header && s.received == s.span.floats()) finish(s);
  }

  void check_header(const proto::StateHeader& h, const std::string& from) const {
    if (h.format_version() != kStateFormatVersion) {
      throw StateTransferError("state format " + std::to_string(h.format_version()) + " from '" + from +
                               "', this build reads " + std::to_string(kStateFormatVersion) +
                               ": run the same gossipd version on every worker");
    }
    if (h.parameter_floats() != plan_.param_floats || h.optimizer_state_floats() != plan_.optimizer_floats) {
      throw StateTransferError("state from '" + from + "' has " + std::to_string(h.parameter_floats()) +
                               " parameters and " + std::to_string(h.optimizer_state_floats()) +
                               " optimizer floats, this worker " + std::to_string(plan_.param_floats) +
                               " and " + std::to_string(plan_.optimizer_floats) +
                               ": use the cluster's --model and --optimizer");
    }
  }

  void copy_chunk(const protocol::Message& m, Share& s) {
    const proto::Envelope& e = m.envelope;
    const bool params = e.segment_id() == kStateParams;
    const size_t begin = params ? s.span.param_begin : s.span.optimizer_begin;
    const size_t end = params ? s.span.param_end : s.span.optimizer_end;
    if ((!params && e.segment_id() != kStateOptimizer) || e.dtype() != proto::DTYPE_FLOAT32 ||
        e.offset() < begin || e.offset() > end || e.count() > end - e.offset()) {
      throw StateTransferError("state chunk from '" + s.donor + "' out of bounds (buffer " +
                               std::to_string(e.segment_id()) + ", offset " + std::to_string(e.offset()) +
                               ", share " + std::to_string(e.chunk()) + ")");
    }
    std::vector<float>& buf = params ? st_.params : st_.optimizer;
    const auto bytes = m.bytes();
    std::copy_n(bytes.data(), bytes.size(), reinterpret_cast<std::byte*>(buf.data() + e.offset()));
    s.received += e.count();
  }

  void finish(Share& s) {
    if (share_crc(st_.params, st_.optimizer, s.span) != s.header.payload_crc32()) {
      throw StateTransferError("state from '" + s.donor +
                               "' failed its CRC-32 check: the download was corrupted");
    }
    s.done = true;
    --left_;
    if (plan_.take_over) take_over(s.donor);
  }

  // `donor` sent its share and holds its snapshot: it also takes the next
  // share whose donor has sent nothing yet (still before its step boundary;
  // that donor's stream, if it comes, is dropped as a replaced donor's).
  void take_over(const std::string& donor) {
    for (uint32_t i = 0; i < shares_.size(); ++i) {
      Share& t = shares_[i];
      if (t.done || t.have_header || t.tried.count(donor) || started_.count(t.donor)) continue;
      ++taken_over_;
      ask(i, donor);
      return;
    }
  }

  // Share 0's header; SGP's weight of each segment from the share that holds it.
  ReplicaState assemble() {
    st_.header = shares_[0].header;
    auto* w = st_.header.mutable_push_sum_weights();
    size_t offset = 0;
    for (int seg = 0; seg < w->size() && seg < static_cast<int>(plan_.segment_lengths.size()); ++seg) {
      for (const auto& s : shares_) {
        if (s.span.holds_param(offset) && s.header.push_sum_weights_size() == w->size()) {
          w->Set(seg, s.header.push_sum_weights(seg));
        }
      }
      offset += plan_.segment_lengths[seg];
    }
    st_.header.set_payload_crc32(
        share_crc(st_.params, st_.optimizer, whole_state(st_.params.size(), st_.optimizer.size())));
    return std::move(st_);
  }

  protocol::Node& node_;
  const DownloadPlan& plan_;
  ReplicaState st_;
  std::vector<Share> shares_;
  std::set<std::string> silent_;
  std::set<std::string> started_;  // donors that sent a share's header: they hold a snapshot
  size_t left_ = 0;
  uint32_t reasked_ = 0;
  uint32_t taken_over_ = 0;
  double wait_ms_ = 0;
};

}  // namespace

Download download_state(protocol::Node& node, const DownloadPlan& plan, std::stop_token stop) {
  if (plan.donors.empty() || plan.shares == 0)
    throw StateTransferError("state download with no member to ask");
  Downloader d(node, plan);
  return d.run(stop);
}

}  // namespace gossipd::daemon
