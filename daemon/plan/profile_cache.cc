// The layer profile's text form and its cache file (layer_profile.h).
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "daemon/plan/layer_profile.h"
#include "trainer/durable_file.h"

namespace gossipd::daemon {
namespace {

constexpr const char* kMagic = "gossipd pipeline profile 2";

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// Reads the profile line by line, naming the first line that does not read.
class ProfileReader {
 public:
  ProfileReader(const std::string& text, const std::string& path) : in_(text), path_(path) {}

  LayerProfile read() {
    if (!next() || line_ != kMagic) fail("it does not start with '" + std::string(kMagic) + "'");
    LayerProfile p;
    p.model = field("model");
    p.machine = field("machine");
    p.date = field("date");
    p.input_floats = static_cast<size_t>(count(field("input_floats")));
    p.update_s_per_param = seconds(field("update_s_per_param"));
    p.copy_s_per_param = seconds(field("copy_s_per_param"));
    bool more = next();
    while (more) {
      const size_t b = static_cast<size_t>(count(value_of("size")));
      if (b == 0 || (!p.sizes.empty() && b <= p.sizes.back())) fail("sizes must rise from 1");
      p.sizes.push_back(b);
      p.at.emplace_back();
      while ((more = next()) && line_.rfind("layer ", 0) == 0) p.at.back().push_back(layer());
      if (p.at.back().empty() || p.at.back().size() != p.at.front().size())
        fail("size " + std::to_string(b) + " times " + std::to_string(p.at.back().size()) + " layers");
    }
    if (p.sizes.empty()) fail("it times no micro-batch size");
    return p;
  }

 private:
  bool next() {
    ++number_;
    return static_cast<bool>(std::getline(in_, line_));
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("profile cache " + path_ + " line " + std::to_string(number_) + ": " + why +
                                " (delete it to profile again)");
  }
  std::string value_of(const std::string& key) {
    if (line_.rfind(key + " ", 0) != 0) fail("expected '" + key + " ...'");
    return line_.substr(key.size() + 1);
  }
  std::string field(const std::string& key) {
    if (!next()) fail("it ends before '" + key + "'");
    return value_of(key);
  }
  double seconds(const std::string& text) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= 0) || v > 1e6) fail("'" + text + "' is not a time in seconds");
    return v;
  }
  unsigned long long count(const std::string& text) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || v > (1ull << 40))
      fail("'" + text + "' is not a count");
    return v;
  }
  trainer::LayerTiming layer() {
    std::istringstream words(line_.substr(6));
    std::string kind, f, b, r, w, out, params;
    const bool read = static_cast<bool>(words >> kind >> f >> b >> r >> w >> out >> params);
    if (!read || !(words >> std::ws).eof())
      fail("expected 'layer KIND FORWARD_S BACKWARD_S REFIND_S WEIGHTS_S OUT_FLOATS PARAMS'");
    trainer::LayerTiming t;
    t.kind = kind;
    t.forward_s = seconds(f);
    t.backward_s = seconds(b);
    t.refind_s = seconds(r);
    t.weights_s = seconds(w);
    if (t.weights_s > t.backward_s) fail("a layer's weights' gradient takes longer than its whole backward");
    t.out_floats = static_cast<size_t>(count(out));
    t.params = static_cast<size_t>(count(params));
    return t;
  }

  std::istringstream in_;
  std::string path_;
  std::string line_;
  size_t number_ = 0;
};

// Why the profile in `file` cannot serve `key` here, or empty.
std::string unfit(const LayerProfile& p, const std::string& key) {
  if (p.model != key) return "it is of another model (" + p.model + ")";
  if (p.machine != this_machine()) return "it was measured on " + p.machine + ", this is " + this_machine();
  return "";
}

}  // namespace

std::string profile_text(const LayerProfile& p) {
  std::string out = std::string(kMagic) + "\nmodel " + p.model + "\nmachine " + p.machine + "\ndate " +
                    p.date + "\ninput_floats " + std::to_string(p.input_floats) + "\nupdate_s_per_param " +
                    number(p.update_s_per_param) + "\ncopy_s_per_param " + number(p.copy_s_per_param) + "\n";
  for (size_t i = 0; i < p.sizes.size(); ++i) {
    out += "size " + std::to_string(p.sizes[i]) + "\n";
    for (const trainer::LayerTiming& t : p.at[i]) {
      out += "layer " + t.kind + " " + number(t.forward_s) + " " + number(t.backward_s) + " " +
             number(t.refind_s) + " " + number(t.weights_s) + " " + std::to_string(t.out_floats) + " " +
             std::to_string(t.params) + "\n";
    }
  }
  return out;
}

LayerProfile parse_profile(const std::string& text, const std::string& path) {
  return ProfileReader(text, path).read();
}

std::filesystem::path profile_file(const std::filesystem::path& dir, const std::string& model_key) {
  char name[64];
  std::snprintf(name, sizeof(name), "pipeline-profile-%016zx.txt", std::hash<std::string>{}(model_key));
  return dir / name;
}

CachedProfile cached_profile(const std::filesystem::path& file, trainer::Model& model,
                             const trainer::OptimizerOptions& optimizer, const std::vector<size_t>& sizes,
                             int reps) {
  CachedProfile c;
  const std::string key = model_key(model, optimizer);
  std::string why = "no profile cached in " + file.string();
  if (std::ifstream in(file); in) {
    std::stringstream text;
    text << in.rdbuf();
    try {
      LayerProfile cached = parse_profile(text.str(), file.string());
      why = unfit(cached, key);
      if (why.empty()) c.profile = std::move(cached);
    } catch (const std::invalid_argument& e) {
      why = e.what();
    }
  }
  std::vector<size_t> missing;
  for (size_t b : sizes) {
    if (b > 0 && !c.profile.has(b)) missing.push_back(b);
  }
  if (missing.empty()) {
    c.said = "layer profile from " + file.string() + " (" + c.profile.machine + ", " + c.profile.date + ")";
    return c;
  }
  const bool anew = c.profile.sizes.empty();
  profile_layers(model, optimizer, missing, reps, c.profile);
  c.said = (anew ? "profiled the layers here at " + std::to_string(missing.size()) + " micro-batch sizes (" +
                       why + ")"
                 : "profiled " + std::to_string(missing.size()) + " micro-batch sizes the cache lacked") +
           "; cached in " + file.string();
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  try {
    trainer::write_file_durably(file, profile_text(c.profile));
  } catch (const std::exception& e) {
    c.said += " failed: " + std::string(e.what());
  }
  return c;
}

}  // namespace gossipd::daemon
