// The sparse mode's text files — the Sparse DNN Graph Challenge's (layers,
// inputs, categories) and partition files: any bytes are read whole or
// refused with DataError, never crash.
#include <cassert>
#include <string>

#include "daemon/modes/sparse/net/challenge_files.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/net/tsv_lines.h"
#include "daemon/modes/sparse/partition_file.h"
#include "trainer/errors.h"

using namespace gossipd::trainer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {  // a layer of 8 neurons
    auto lines = sparse::TsvLines::of_text("layer", text);
    const sparse::SparseLayer l = sparse::read_layer(lines, 8, -0.3f);
    assert(l.offsets.size() == 9 && l.offsets.back() == l.edges());
  } catch (const DataError&) {
  }
  try {
    auto lines = sparse::TsvLines::of_text("inputs", text);
    const sparse::SparseInputs in = sparse::read_inputs(lines, 8);
    assert(in.offsets.back() == in.nonzeros());
  } catch (const DataError&) {
  }
  try {
    auto lines = sparse::TsvLines::of_text("categories", text, true);
    const auto c = sparse::read_categories(lines, 1000);
    assert(c.empty() || c.back() < 1000);
  } catch (const DataError&) {
  }
  try {  // a partition of a 32-neuron, 2-layer RadiX-Net
    static const sparse::SparseNet net = sparse::make_radix_net(32, 2);
    uint32_t procs = 0;
    const auto owners = gossipd::daemon::parse_partition("partition", text, net, procs);
    assert(owners.size() == 3 && owners[0].size() == 32 && procs >= 1 && procs <= 64);
  } catch (const DataError&) {
  }
  return 0;
}
