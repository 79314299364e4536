#include "daemon/config/wan_topology.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/config/tc_rate.h"

namespace gossipd::daemon {
namespace {

const std::regex kHost("w([0-9]{1,4})");
const std::regex kHostRange("w([0-9]{1,4})-w([0-9]{1,4})");

// One line's place in the file, for its errors.
struct Line {
  std::string where;
  size_t number = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(where + ":" + std::to_string(number) + ": " + what);
  }
};

double number(const Line& l, const std::string& key, std::string value) {
  if (key != "loss" && value.size() > 2 && value.ends_with("ms")) value.resize(value.size() - 2);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !std::isfinite(v)) l.fail(key + " '" + value + "' is not a number");
  return v;
}

// "delay 40 jitter 4 loss 0.01 rate 100mbit", from `words[first]` on.
WanLink link_values(const Line& l, const std::vector<std::string>& words, size_t first) {
  WanLink link;
  if (first >= words.size())
    l.fail("'" + words[0] + "' needs values: delay MS [jitter MS] [loss P] [rate R]");
  for (size_t i = first; i < words.size(); i += 2) {
    const std::string& key = words[i];
    if (i + 1 >= words.size()) l.fail(key + " needs a value");
    const std::string& value = words[i + 1];
    if (key == "rate") {
      if (!is_tc_rate(value)) l.fail("rate '" + value + "' is not a tc rate like 100mbit");
      link.rate = value;
      continue;
    }
    const double v = number(l, key, value);
    if (key == "delay" || key == "jitter") {
      if (v < 0) l.fail(key + " " + value + " is negative: give milliseconds >= 0, e.g. 40");
      if (v > 10000) l.fail(key + " " + value + " ms is over 10 s: give milliseconds up to 10000");
      (key == "delay" ? link.delay_ms : link.jitter_ms) = v;
    } else if (key == "loss") {
      if (v < 0 || v >= 1)
        l.fail("loss " + value + " is not in [0, 1): give the fraction of packets lost, e.g. 0.01");
      link.loss = v;
    } else {
      l.fail("unknown key '" + key + "': use delay, jitter, loss or rate");
    }
  }
  return link;
}

int host_number(const Line& l, const std::string& word) {
  std::smatch m;
  if (!std::regex_match(word, m, kHost)) l.fail("'" + word + "' is not a host: write wK (w0, w1, ...)");
  return std::stoi(m[1].str());
}

class Parser {
 public:
  explicit Parser(std::string where) : where_(std::move(where)) {}

  // Every line of `text` (a # starts a comment), then the checks of the whole.
  WanTopology parse(const std::string& text) {
    std::istringstream in(text);
    for (std::string raw; std::getline(in, raw);) {
      ++lines_;
      std::istringstream words(raw.substr(0, raw.find('#')));
      std::vector<std::string> w;
      for (std::string word; words >> word;) w.push_back(word);
      if (!w.empty()) line(Line{where_, lines_}, w);
    }
    return finish(text);
  }

 private:
  void line(const Line& l, const std::vector<std::string>& w) {
    if (w[0] == "region") return region(l, w);
    if (w[0] == "inside") return set_once(l, inside_, link_values(l, w, 1));
    if (w[0] == "between") return set_once(l, between_, link_values(l, w, 1));
    if (w[0] == "link") return pair(l, w);
    if (w[0] == "host") return host(l, w);
    l.fail("unknown line '" + w[0] + "': use region, inside, between, link or host");
  }

  WanTopology finish(std::string text) {
    const Line end{where_, lines_};
    WanTopology t;
    t.text = std::move(text);
    if (hosts_.empty()) end.fail("no region: write 'region NAME w0-w3' lines");
    const int n = hosts_.rbegin()->first + 1;
    for (int h = 0; h < n; ++h)
      if (!hosts_.count(h))
        end.fail(wan_host_name(static_cast<size_t>(h)) + " is in no region: the hosts are w0-w" +
                 std::to_string(n - 1) + ", each in one region");
    t.regions = regions_;
    for (const auto& [h, r] : hosts_) t.region_of.push_back(r);
    t.host_rate.assign(static_cast<size_t>(n), "");
    for (const auto& [h, hl] : host_rates_) {
      if (h >= n)
        hl.second.fail("host " + wan_host_name(static_cast<size_t>(h)) +
                       " is in no region (the hosts are w0-w" + std::to_string(n - 1) + ")");
      t.host_rate[static_cast<size_t>(h)] = hl.first;
    }
    links_matrix(t);
    return t;
  }

  void region(const Line& l, const std::vector<std::string>& w) {
    if (w.size() < 3) l.fail("region needs a name and its hosts: region eu w0-w3");
    if (w[1] == "*" || std::regex_match(w[1], kHost)) l.fail("'" + w[1] + "' cannot name a region");
    if (std::find(regions_.begin(), regions_.end(), w[1]) != regions_.end())
      l.fail("region " + w[1] + " is named twice");
    const auto r = static_cast<uint32_t>(regions_.size());
    regions_.push_back(w[1]);
    for (size_t i = 2; i < w.size(); ++i) {
      std::smatch m;
      int lo = 0, hi = 0;
      if (std::regex_match(w[i], m, kHostRange)) {
        lo = std::stoi(m[1].str()), hi = std::stoi(m[2].str());
        if (hi < lo) l.fail("'" + w[i] + "' runs backwards: write the lower host first");
      } else {
        lo = hi = host_number(l, w[i]);
      }
      for (int h = lo; h <= hi; ++h) {
        if (hosts_.count(h))
          l.fail(wan_host_name(static_cast<size_t>(h)) + " is in two regions: " + regions_[hosts_[h]] +
                 " and " + w[1]);
        hosts_[h] = r;
      }
    }
  }

  void pair(const Line& l, const std::vector<std::string>& w) {
    if (w.size() < 4) l.fail("link needs two regions and values: link eu us delay 40");
    pairs_.push_back({w[1], w[2], link_values(l, w, 3), l});
  }

  void host(const Line& l, const std::vector<std::string>& w) {
    if (w.size() != 4 || w[2] != "rate") l.fail("host takes a rate only: host w5 rate 10mbit");
    if (!is_tc_rate(w[3])) l.fail("rate '" + w[3] + "' is not a tc rate like 10mbit");
    host_rates_[host_number(l, w[1])] = {w[3], l};
  }

  static void set_once(const Line& l, std::optional<WanLink>& slot, WanLink v) {
    if (slot) l.fail("given twice: one such line per file");
    slot = std::move(v);
  }

  uint32_t region_index(const Line& l, const std::string& name) const {
    const auto it = std::find(regions_.begin(), regions_.end(), name);
    if (it == regions_.end()) l.fail("unknown region '" + name + "': name one of the file's 'region' lines");
    return static_cast<uint32_t>(it - regions_.begin());
  }

  void links_matrix(WanTopology& t) const {
    const size_t k = regions_.size();
    std::vector<std::vector<std::optional<WanLink>>> m(k, std::vector<std::optional<WanLink>>(k));
    for (size_t a = 0; a < k; ++a)
      for (size_t b = 0; b < k; ++b) m[a][b] = a == b ? inside_.value_or(WanLink{}) : between_;
    for (const auto& p : pairs_) {
      const uint32_t a = region_index(p.line, p.a), b = region_index(p.line, p.b);
      m[a][b] = m[b][a] = p.link;
    }
    t.links.assign(k, std::vector<WanLink>(k));
    for (size_t a = 0; a < k; ++a)
      for (size_t b = 0; b < k; ++b) {
        if (!m[a][b])
          Line{where_, lines_}.fail("no link between " + regions_[a] + " and " + regions_[b] +
                                    ": add 'link " + regions_[a] + " " + regions_[b] +
                                    " delay MS ...' or a 'between' line");
        t.links[a][b] = *m[a][b];
      }
  }

  struct Pair {
    std::string a, b;
    WanLink link;
    Line line;
  };
  std::string where_;
  size_t lines_ = 0;
  std::vector<std::string> regions_;
  std::map<int, uint32_t> hosts_;
  std::map<int, std::pair<std::string, Line>> host_rates_;
  std::optional<WanLink> inside_, between_;
  std::vector<Pair> pairs_;
};

std::string range_text(double lo, double hi, const std::string& unit) {
  std::ostringstream s;
  s << lo;
  if (hi != lo) s << "-" << hi;
  s << unit;
  return s.str();
}

// "30-80 ms, 0.5-2% loss, 20mbit-100mbit": the spans of `links`' values.
std::string links_line(const std::vector<WanLink>& links) {
  if (links.empty()) return "none";
  const auto span_of = [&](auto value, const std::string& unit) {
    const auto [lo, hi] = std::minmax_element(
        links.begin(), links.end(), [&](const WanLink& a, const WanLink& b) { return value(a) < value(b); });
    return range_text(value(*lo), value(*hi), unit);
  };
  const auto bytes = [](const WanLink& l) {
    return l.rate.empty() ? HUGE_VAL : tc_rate_bytes_per_second(l.rate);
  };
  const auto [slow, fast] = std::minmax_element(
      links.begin(), links.end(), [&](const WanLink& a, const WanLink& b) { return bytes(a) < bytes(b); });
  const auto name = [](const WanLink& l) { return l.rate.empty() ? std::string("uncapped") : l.rate; };
  return span_of([](const WanLink& l) { return l.delay_ms; }, " ms") + ", " +
         span_of([](const WanLink& l) { return l.loss * 100; }, "% loss") + ", " +
         (name(*slow) == name(*fast) ? name(*slow) : name(*slow) + "-" + name(*fast));
}

// The links inside a region (`inside`) or between two.
std::vector<WanLink> links_where(const WanTopology& t, bool inside) {
  std::vector<WanLink> out;
  for (size_t a = 0; a < t.regions.size(); ++a)
    for (size_t b = 0; b < t.regions.size(); ++b)
      if ((a == b) == inside) out.push_back(t.links[a][b]);
  return out;
}

}  // namespace

std::string wan_host_name(size_t k) {
  std::ostringstream s;
  s << "w" << k;
  return s.str();
}

int WanTopology::host_index(const std::string& id) const {
  std::smatch m;
  if (!std::regex_match(id, m, kHost)) return -1;
  const int h = std::stoi(m[1].str());
  return h < static_cast<int>(hosts()) ? h : -1;
}

WanTopology parse_wan_topology(const std::string& text, const std::string& where) {
  return Parser(where).parse(text);
}

WanTopology read_wan_topology(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read the topology file " + path + ": give an existing file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_wan_topology(text.str(), path);
}

std::string WanTopology::describe() const {
  std::ostringstream s;
  s << hosts() << " hosts in " << regions.size() << " regions (";
  for (size_t r = 0; r < regions.size(); ++r)
    s << (r ? ", " : "") << regions[r] << " " << std::count(region_of.begin(), region_of.end(), r);
  s << "); inside a region " << links_line(links_where(*this, true)) << "; between regions "
    << links_line(links_where(*this, false));
  std::string slow;
  for (size_t h = 0; h < hosts(); ++h)
    if (!host_rate[h].empty()) slow += (slow.empty() ? "" : ", ") + wan_host_name(h) + " " + host_rate[h];
  if (!slow.empty()) s << "; slower hosts " << slow;
  return s.str();
}

const std::string& default_wan_topology_text() {
  static const std::string text = R"(# gossipd's default WAN (gossipctl compare --preset wan): 16 hosts in 4
# regions. Edit a copy and give it with --topology; the syntax is in
# daemon/config/wan_topology.h. delay and jitter: one-way ms; loss: the
# fraction of packets lost; rate: a tc rate.
region eu w0-w3
region us w4-w7
region asia w8-w11
region sa w12-w15
inside delay 2 jitter 0.2 rate 1gbit
between delay 60 jitter 5 loss 0.01 rate 50mbit
link eu us delay 30 jitter 3 loss 0.005 rate 100mbit
link eu asia delay 80 jitter 6 loss 0.02 rate 20mbit
link us sa delay 40 jitter 4 loss 0.01 rate 50mbit
link asia sa delay 80 jitter 8 loss 0.02 rate 10mbit
host w7 rate 10mbit
host w13 rate 10mbit
)";
  return text;
}

}  // namespace gossipd::daemon
