#include "daemon/observe/metrics.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gossipd::daemon {
namespace {

std::string escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string label_text(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ',';
    s += labels[i].first + "=\"" + escape(labels[i].second) + "\"";
  }
  return s + "}";
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, const std::string& help,
                                                 const std::string& type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.help = help;
    it->second.type = type;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered as " + it->second.type + " and " + type);
  }
  return it->second;
}

Counter& MetricsRegistry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, "counter").counters[label_text(labels)];
  if (!slot.second) slot = {labels, std::make_unique<Counter>()};
  return *slot.second;
}

Gauge& MetricsRegistry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard lock(mu_);
  auto& slot = family(name, help, "gauge").gauges[label_text(labels)];
  if (!slot.second) slot = {labels, std::make_unique<Gauge>()};
  return *slot.second;
}

void MetricsRegistry::sampled(const std::string& name, const std::string& help, const std::string& type,
                              Sampler fn) {
  std::lock_guard lock(mu_);
  family(name, help, type).sampler = std::move(fn);
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + f.type + "\n";
    for (const auto& [text, c] : f.counters) out += name + text + " " + number(c.second->value()) + "\n";
    for (const auto& [text, g] : f.gauges) out += name + text + " " + number(g.second->value()) + "\n";
    if (f.sampler) {
      for (const auto& [labels, v] : f.sampler()) out += name + label_text(labels) + " " + number(v) + "\n";
    }
  }
  return out;
}

}  // namespace gossipd::daemon
