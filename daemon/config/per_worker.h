#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "daemon/config/worker_values.h"

namespace gossipd::daemon {

// A per-worker flag (gossipctl's --inject-step-delay-ms w3=40,w7=40,
// --stragglers w3=2.5, --slow-links w2=10mbit): the text as the user gave
// it, which reports quote and child commands are given, and the typed value
// of each worker it names, parsed once where the command's flags are read
// (resolve) and read from there on: nothing below the command parses it.
template <class T>
struct PerWorker {
  std::string text;
  std::map<size_t, T> values;  // by worker index; empty until resolved

  bool empty() const { return text.empty() && values.empty(); }
};

// Fills `p.values` from `p.text`: each WORKER=VALUE item's worker checked
// against `workers` (worker_values) and its value parsed by
// `parse(value, item)`, which throws UsageError naming the item. Throws
// UsageError naming `flag` for an item that is not WORKER=VALUE.
template <class T, class Parse>
void resolve(PerWorker<T>& p, const std::string& flag, int workers, Parse parse) {
  p.values.clear();
  for (const auto& [k, value] : worker_values(p.text, flag, workers))
    p.values[k] = parse(value, "w" + std::to_string(k) + "=" + value);
}

}  // namespace gossipd::daemon
