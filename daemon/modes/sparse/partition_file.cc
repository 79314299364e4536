#include "daemon/modes/sparse/partition_file.h"

#include <charconv>
#include <sstream>

#include "daemon/modes/sparse/net/tsv_lines.h"
#include "trainer/durable_file.h"
#include "trainer/errors.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;
using trainer::DataError;

constexpr const char* kMagic = "gossipd-sparse-partition";

// FNV-1a over 32-bit words.
void mix(uint64_t& h, uint32_t v) {
  for (int b = 0; b < 4; ++b) {
    h ^= (v >> (8 * b)) & 0xffu;
    h *= 0x100000001b3ULL;
  }
}

// Reads one whitespace-separated unsigned number from [p, end).
bool next_number(const char*& p, const char* end, uint64_t& v) {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  const auto [q, ec] = std::from_chars(p, end, v);
  if (ec != std::errc() || q == p) return false;
  p = q;
  return true;
}

struct Header {
  uint64_t neurons = 0, layers = 0, procs = 0, fingerprint = 0;
};

Header parse_header(const std::string& name, const std::string& line) {
  std::istringstream in(line);
  std::string magic, version, k1, k2, k3, k4;
  Header h;
  in >> magic >> version >> k1 >> h.neurons >> k2 >> h.layers >> k3 >> h.procs >> k4 >> std::hex >>
      h.fingerprint;
  if (!in || magic != kMagic || version != "1" || k1 != "neurons" || k2 != "layers" || k3 != "procs" ||
      k4 != "network")
    throw DataError(
        name + ":1: not a gossipd sparse partition (make one: gossipctl plan sparse --write-partitions)");
  return h;
}

}  // namespace

uint64_t network_fingerprint(const sp::SparseNet& net) {
  uint64_t h = 0xcbf29ce484222325ULL;
  mix(h, net.neurons);
  mix(h, static_cast<uint32_t>(net.layers.size()));
  for (const sp::SparseLayer& l : net.layers) {
    for (uint32_t o : l.offsets) mix(h, o);
    for (uint32_t s : l.sources) mix(h, s);
  }
  return h;
}

std::string partition_text(const sp::SparseNet& net, const NeuronOwners& owners, uint32_t procs) {
  std::ostringstream out;
  out << kMagic << " 1 neurons " << net.neurons << " layers " << net.layers.size() << " procs " << procs
      << " network " << std::hex << network_fingerprint(net) << std::dec << "\n";
  for (const std::vector<uint32_t>& layer : owners) {
    for (size_t j = 0; j < layer.size(); ++j) out << (j ? " " : "") << layer[j];
    out << "\n";
  }
  return out.str();
}

void write_partition_file(const std::filesystem::path& file, const sp::SparseNet& net,
                          const NeuronOwners& owners, uint32_t procs) {
  trainer::write_file_durably(file, partition_text(net, owners, procs));
}

NeuronOwners parse_partition(const std::string& name, const std::string& text, const sp::SparseNet& net,
                             uint32_t& procs) {
  sp::check_whole_text(name, text, /*may_be_empty=*/false);
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  const Header h = parse_header(name, line);
  if (h.neurons != net.neurons || h.layers != net.layers.size() || h.fingerprint != network_fingerprint(net))
    throw DataError(name + ": made for another network (" + std::to_string(h.neurons) + " neurons x " +
                    std::to_string(h.layers) + " layers, fingerprint differs or not): make it for this one");
  if (h.procs == 0 || h.procs > 64)
    throw DataError(name + ":1: procs " + std::to_string(h.procs) + " is not 1..64");
  NeuronOwners owners;
  for (size_t l = 0; l <= net.layers.size(); ++l) {
    const std::string where = name + ":" + std::to_string(l + 2);
    if (!std::getline(lines, line)) throw DataError(where + ": missing (a truncated copy? make it again)");
    std::vector<uint32_t> layer;
    const char* p = line.data();
    const char* end = p + line.size();
    uint64_t v = 0;
    while (layer.size() < net.neurons && next_number(p, end, v)) {
      if (v >= h.procs)
        throw DataError(where + ": owner " + std::to_string(v) + " is not below procs " +
                        std::to_string(h.procs));
      layer.push_back(static_cast<uint32_t>(v));
    }
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    if (layer.size() != net.neurons || p != end)
      throw DataError(where + ": expected " + std::to_string(net.neurons) + " owners, one per neuron");
    owners.push_back(std::move(layer));
  }
  while (std::getline(lines, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      throw DataError(name + ": more lines than the network's " + std::to_string(net.layers.size() + 1));
  procs = static_cast<uint32_t>(h.procs);
  return owners;
}

NeuronOwners read_partition_file(const std::filesystem::path& file, const sp::SparseNet& net,
                                 uint32_t& procs) {
  return parse_partition(file.string(), sp::read_text_file(file), net, procs);
}

}  // namespace gossipd::daemon
