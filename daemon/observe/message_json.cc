#include "daemon/observe/message_json.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <stdexcept>

namespace gossipd::daemon {
namespace {

namespace pb = google::protobuf;

constexpr char kModeStatus[] = "mode_status";

std::string plain_json(const pb::Message& message) {
  pb::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  const auto status = pb::util::MessageToJsonString(message, &out, opts);
  // Every message rendered is one this binary built: a failure is a bug.
  if (!status.ok()) throw std::logic_error("cannot render JSON: " + status.ToString());
  return out;
}

// `object` ("{...}") with "key": value as its last member.
std::string with_member(const std::string& object, const std::string& key, const std::string& value) {
  const std::string member = "\"" + key + "\":" + value;
  return object == "{}" ? "{" + member + "}" : object.substr(0, object.size() - 1) + "," + member + "}";
}

// A mode's name as a JSON key: a plain name (modes are), else mode_status.
std::string mode_key(const std::string& algo) {
  const bool plain =
      !algo.empty() && algo.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
  return plain ? algo : kModeStatus;
}

std::string status_json(const proto::Status& s) {
  if (!s.has_mode_status()) return plain_json(s);
  proto::Status rest = s;
  rest.clear_mode_status();
  return with_member(plain_json(rest), mode_key(s.algo()), plain_json(s.mode_status()));
}

// In every object of `v` that has an "algo": the member under the mode's
// name that holds an "@type" goes back to mode_status, or out where this
// binary does not know the type.
void mode_status_back(pb::Value& v) {
  if (v.has_list_value()) {
    for (pb::Value& item : *v.mutable_list_value()->mutable_values()) mode_status_back(item);
    return;
  }
  if (!v.has_struct_value()) return;
  auto& fields = *v.mutable_struct_value()->mutable_fields();
  for (auto& [key, value] : fields) mode_status_back(value);
  const auto algo = fields.find("algo");
  if (algo == fields.end() || !algo->second.has_string_value()) return;
  const std::string key = mode_key(algo->second.string_value());
  const auto own = fields.find(key);
  if (key == kModeStatus || own == fields.end() || !own->second.has_struct_value()) return;
  const auto& inner = own->second.struct_value().fields();
  const auto type = inner.find("@type");
  if (type == inner.end() || !type->second.has_string_value()) return;
  const std::string url = type->second.string_value();
  const bool known =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName(url.substr(url.rfind('/') + 1)) != nullptr;
  if (known) fields[kModeStatus] = own->second;
  fields.erase(key);
}

}  // namespace

std::string to_json(const pb::Message& message) {
  if (const auto* s = dynamic_cast<const proto::Status*>(&message)) return status_json(*s);
  if (const auto* r = dynamic_cast<const proto::ControlRecord*>(&message); r && r->has_status()) {
    proto::ControlRecord rest = *r;
    rest.clear_status();
    return with_member(plain_json(rest), "status", status_json(r->status()));
  }
  return plain_json(message);
}

bool from_json(const std::string& text, pb::Message& into, std::string* why, bool strict) {
  pb::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = !strict;
  pb::Value tree;
  auto status = pb::util::JsonStringToMessage(text, &tree, opts);
  std::string json;
  if (status.ok()) {
    mode_status_back(tree);
    status = pb::util::MessageToJsonString(tree, &json);
  }
  if (status.ok()) status = pb::util::JsonStringToMessage(json, &into, opts);
  if (!status.ok() && why) *why = status.ToString();
  return status.ok();
}

}  // namespace gossipd::daemon
