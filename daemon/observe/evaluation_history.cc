#include "daemon/observe/evaluation_history.h"

#include "daemon/observe/message_json.h"

namespace gossipd::daemon {

void EvaluationHistory::add(const proto::EpochRecord& record) {
  std::string json = to_json(record);
  std::lock_guard lock(mu_);
  records_.push_back(std::move(json));
  while (records_.size() > capacity_) records_.pop_front();
}

std::string EvaluationHistory::json() const {
  std::lock_guard lock(mu_);
  std::string out = "[";
  for (size_t i = 0; i < records_.size(); ++i) out += (i ? ",\n" : "") + records_[i];
  return out + "]\n";
}

size_t EvaluationHistory::size() const {
  std::lock_guard lock(mu_);
  return records_.size();
}

}  // namespace gossipd::daemon
