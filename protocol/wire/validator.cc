#include "protocol/wire/validator.h"

#include <mutex>

#include "protocol/wire/codec.h"
#include "protocol/wire/endpoint.h"

namespace gossipd::protocol {

void Validator::set_members(const std::vector<std::string>& members) {
  std::unique_lock lock(mutex_);
  members_ = std::set<std::string>(members.begin(), members.end());
}

void Validator::add_member(const std::string& member) {
  std::unique_lock lock(mutex_);
  members_.insert(member);
}

void Validator::remove_member(const std::string& member) {
  std::unique_lock lock(mutex_);
  members_.erase(member);
}

bool Validator::is_member(const std::string& member) const {
  std::shared_lock lock(mutex_);
  return members_.count(member) > 0;
}

void Validator::set_open_types(std::set<proto::MessageType> types) {
  std::unique_lock lock(mutex_);
  open_types_ = std::move(types);
}

void Validator::set_segment_lengths(std::vector<uint64_t> lengths) {
  std::unique_lock lock(mutex_);
  segment_lengths_ = std::move(lengths);
}

std::optional<RejectReason> Validator::check_header(const RawMessage& raw, const proto::Envelope& env,
                                                    std::string* why) const {
  if (env.version() != options_.version) {
    *why = "version " + std::to_string(env.version());
    return RejectReason::kVersion;
  }
  if (env.cluster_id() != options_.cluster_id) {
    *why = "cluster '" + env.cluster_id() + "'";
    return RejectReason::kCluster;
  }
  const bool open = [&] {
    std::shared_lock lock(mutex_);
    return open_types_.count(env.type()) > 0;
  }();
  if (!open && !is_member(env.sender())) {
    *why = "sender '" + env.sender() + "'";
    return RejectReason::kUnknownSender;
  }
  if (env.sender() != raw.peer) {
    *why = "envelope says '" + env.sender() + "'";
    return RejectReason::kSenderMismatch;
  }
  if (env.type() == proto::MESSAGE_TYPE_UNSPECIFIED || !proto::MessageType_IsValid(env.type())) {
    *why = "type " + std::to_string(env.type());
    return RejectReason::kUnknownType;
  }
  return std::nullopt;
}

std::optional<RejectReason> Validator::check_payload(const RawMessage& raw, const proto::Envelope& env,
                                                     std::string* why) const {
  const size_t payload_frames = raw.frames.size() - 1;
  if (!is_tensor_type(env.type())) {
    if (payload_frames == 0) return std::nullopt;
    *why = std::to_string(payload_frames) + " payload frames on a control message";
    return RejectReason::kFrameCount;
  }
  if (payload_frames != 1) {
    *why = std::to_string(payload_frames) + " payload frames, expected 1";
    return RejectReason::kFrameCount;
  }
  // Float32 and the compressed dtypes (codec.h), or a plain fixed-width one.
  const auto spec = declared_spec(env);
  const size_t elem = spec ? 1 : dtype_size(env.dtype());
  if (elem == 0) {
    *why = env.dtype() == proto::DTYPE_INT8_BLOCKS ? int8_block_problem(env.codec_block())
                                                   : "dtype " + std::to_string(env.dtype());
    return RejectReason::kDType;
  }
  const size_t got = raw.frames[1].size();
  // Compare in elements first (every codec takes at least a byte a value): a
  // huge declared count must not overflow.
  const size_t expected = env.count() > options_.max_message_bytes / elem
                              ? SIZE_MAX
                              : (spec ? encoded_bytes(*spec, env.count()) : env.count() * elem);
  if (got < expected) {
    *why = std::to_string(got) + " payload bytes, envelope declares " + std::to_string(env.count()) +
           " elements";
    return RejectReason::kTruncated;
  }
  if (got != expected) {
    *why = std::to_string(got) + " payload bytes, envelope declares " + std::to_string(env.count()) +
           " elements";
    return RejectReason::kSizeMismatch;
  }
  if (env.type() == proto::SEGMENT) {
    std::shared_lock lock(mutex_);
    const bool known = env.segment_id() < segment_lengths_.size();
    if (!known || env.offset() > segment_lengths_[env.segment_id()] ||
        env.count() > segment_lengths_[env.segment_id()] - env.offset()) {
      *why = "segment " + std::to_string(env.segment_id()) + " [" + std::to_string(env.offset()) + ", +" +
             std::to_string(env.count()) + ")";
      return RejectReason::kSegment;
    }
  }
  return std::nullopt;
}

std::optional<RejectReason> Validator::check_body(const proto::Envelope& env, std::string* why) const {
  auto bad_endpoint = [&](const std::string& endpoint, const std::string& whose) {
    const std::string problem = endpoint_problem(endpoint, EndpointUse::kConnect);
    if (!problem.empty())
      *why = whose + " endpoint of " + std::to_string(endpoint.size()) + " bytes: " + problem;
    return !problem.empty();
  };
  if (env.type() == proto::HELLO && bad_endpoint(env.hello().endpoint(), "HELLO"))
    return RejectReason::kBadBody;
  if (env.type() == proto::HELLO && env.hello().has_share()) {
    const auto& share = env.hello().share();
    if (share.of() == 0 || share.of() > kMaxStateShares || share.index() >= share.of()) {
      *why = "state share " + std::to_string(share.index()) + " of " + std::to_string(share.of());
      return RejectReason::kBadBody;
    }
  }
  // ZeroMQ routing ids: 1 to 255 bytes, not starting with a zero byte.
  auto bad_id = [&](const std::string& id) {
    if (!id.empty() && id.size() <= 255 && id.front() != '\0') return false;
    *why = "member id of " + std::to_string(id.size()) + " bytes";
    return true;
  };
  if (env.type() == proto::REUNION) {
    const auto& r = env.reunion();
    if (bad_id(r.lowest())) return RejectReason::kBadBody;
    if (static_cast<size_t>(r.ids_size()) > options_.max_members) {
      *why = "REUNION naming " + std::to_string(r.ids_size()) + " members";
      return RejectReason::kBadBody;
    }
    for (const auto& id : r.ids()) {
      if (bad_id(id)) return RejectReason::kBadBody;
    }
    if (r.members() == 0 || r.members() > options_.max_members) {
      *why = "REUNION of " + std::to_string(r.members()) + " members";
      return RejectReason::kBadBody;
    }
  }
  if (env.has_probe()) {
    const auto& probe = env.probe();
    if (static_cast<size_t>(probe.updates_size()) > kMaxProbeUpdates) {
      *why = std::to_string(probe.updates_size()) + " updates on a probe, more than " +
             std::to_string(kMaxProbeUpdates);
      return RejectReason::kBadBody;
    }
    if (probe.padding().size() > kMaxProbePadding) {
      *why = std::to_string(probe.padding().size()) + " bytes of padding on a probe, more than " +
             std::to_string(kMaxProbePadding);
      return RejectReason::kBadBody;
    }
    if (!probe.target().empty() && bad_id(probe.target())) return RejectReason::kBadBody;
    for (const auto& u : probe.updates()) {
      if (bad_id(u.member().id())) return RejectReason::kBadBody;
      const bool accused = u.kind() == proto::MemberUpdate::ACCUSED;
      if (accused != (u.accusers_size() > 0) ||
          static_cast<size_t>(u.accusers_size()) > options_.max_members) {
        *why = "a member update of kind " + std::to_string(u.kind()) + " naming " +
               std::to_string(u.accusers_size()) + " accusers";
        return RejectReason::kBadBody;
      }
      for (const auto& accuser : u.accusers())
        if (bad_id(accuser)) return RejectReason::kBadBody;
      if (u.kind() == proto::MemberUpdate::ALIVE && bad_endpoint(u.member().endpoint(), "member"))
        return RejectReason::kBadBody;
    }
  }
  if (!env.has_member_list()) return std::nullopt;
  const auto& list = env.member_list();
  if (static_cast<size_t>(list.members_size()) > options_.max_members) {
    *why =
        std::to_string(list.members_size()) + " members, more than " + std::to_string(options_.max_members);
    return RejectReason::kBadBody;
  }
  for (const auto& m : list.members()) {
    if (bad_id(m.id()) || bad_endpoint(m.endpoint(), "member")) return RejectReason::kBadBody;
  }
  return std::nullopt;
}

std::optional<Message> Validator::validate(RawMessage raw) {
  if (raw.frames.empty()) {
    log_.reject(raw.peer, RejectReason::kFrameCount, "no frames");
    return std::nullopt;
  }
  size_t total = 0;
  for (const auto& f : raw.frames) total += f.size();
  if (total > options_.max_message_bytes) {
    log_.reject(raw.peer, RejectReason::kOversize, std::to_string(total) + " bytes");
    return std::nullopt;
  }
  Message msg;
  if (!msg.envelope.ParseFromArray(raw.frames[0].data(), static_cast<int>(raw.frames[0].size()))) {
    log_.reject(raw.peer, RejectReason::kBadEnvelope, std::to_string(raw.frames[0].size()) + "-byte frame 1");
    return std::nullopt;
  }
  std::string why;
  auto reason = check_header(raw, msg.envelope, &why);
  if (!reason) reason = check_payload(raw, msg.envelope, &why);
  if (!reason) reason = check_body(msg.envelope, &why);
  if (reason) {
    log_.reject(raw.peer, *reason, why);
    return std::nullopt;
  }
  msg.payload.assign(std::make_move_iterator(raw.frames.begin() + 1),
                     std::make_move_iterator(raw.frames.end()));
  return msg;
}

}  // namespace gossipd::protocol
