#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gossipd::daemon {

// Label set, e.g. {{"reason", "bad_size"}}; rendered in the given order.
using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void add(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Metrics in the Prometheus text exposition format. Counters and gauges are
// created once (references stay valid for the registry's life) and updated
// lock-free; a sampled family asks a callback for its values at render time,
// so numbers owned by another layer (e.g. the transport's reject counts)
// are read where they live instead of being copied.
class MetricsRegistry {
 public:
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  using Sampler = std::function<std::vector<std::pair<Labels, double>>()>;
  // type is "counter" or "gauge".
  void sampled(const std::string& name, const std::string& help, const std::string& type, Sampler fn);

  std::string render() const;

 private:
  struct Family {
    std::string help, type;
    std::map<std::string, std::pair<Labels, std::unique_ptr<Counter>>> counters;
    std::map<std::string, std::pair<Labels, std::unique_ptr<Gauge>>> gauges;
    Sampler sampler;
  };
  Family& family(const std::string& name, const std::string& help, const std::string& type);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace gossipd::daemon
