#include "daemon/modes/sparse/zoltan_hypergraph.h"

#include <mpi.h>
#include <zoltan.h>

#include <algorithm>
#include <bit>
#include <memory>
#include <stdexcept>
#include <string>

#include "daemon/config/cli.h"

namespace gossipd::daemon {
namespace {

// MPI for Zoltan alone (never the transport): one process, started on
// first use, finished when the program exits.
class MpiSession {
 public:
  MpiSession() {
    int done = 0;
    MPI_Initialized(&done);
    if (done) return;
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw DaemonError("cannot start MPI for Zoltan");
    owned_ = true;
  }
  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Finalize();
  }

 private:
  bool owned_ = false;
};

void start_mpi_once() { static MpiSession session; }

const Hypergraph& graph(void* data) { return *static_cast<const Hypergraph*>(data); }

int num_obj(void* data, int* ierr) {
  *ierr = ZOLTAN_OK;
  return static_cast<int>(graph(data).vertices());
}

void obj_list(void* data, int, int, ZOLTAN_ID_PTR gids, ZOLTAN_ID_PTR lids, int, float* weights, int* ierr) {
  const Hypergraph& h = graph(data);
  for (size_t v = 0; v < h.vertices(); ++v) {
    gids[v] = static_cast<ZOLTAN_ID_TYPE>(v);
    lids[v] = static_cast<ZOLTAN_ID_TYPE>(v);
    weights[v] = h.vertex_weight[v];
  }
  *ierr = ZOLTAN_OK;
}

void hg_size(void* data, int* lists, int* pins, int* format, int* ierr) {
  *lists = static_cast<int>(graph(data).nets());
  *pins = static_cast<int>(graph(data).pins.size());
  *format = ZOLTAN_COMPRESSED_EDGE;
  *ierr = ZOLTAN_OK;
}

void hg_cs(void* data, int, int lists, int pins, int, ZOLTAN_ID_PTR net_ids, int* offsets,
           ZOLTAN_ID_PTR pin_ids, int* ierr) {
  const Hypergraph& h = graph(data);
  for (int k = 0; k < lists; ++k) {
    net_ids[k] = static_cast<ZOLTAN_ID_TYPE>(k);
    offsets[k] = static_cast<int>(h.net_offsets[static_cast<size_t>(k)]);
  }
  for (int p = 0; p < pins; ++p) pin_ids[p] = h.pins[static_cast<size_t>(p)];
  *ierr = ZOLTAN_OK;
}

int num_fixed(void* data, int* ierr) {
  *ierr = ZOLTAN_OK;
  const auto& f = graph(data).fixed_part;
  return static_cast<int>(std::count_if(f.begin(), f.end(), [](int32_t p) { return p >= 0; }));
}

void fixed_list(void* data, int, int, ZOLTAN_ID_PTR gids, int* parts, int* ierr) {
  const auto& f = graph(data).fixed_part;
  int k = 0;
  for (size_t v = 0; v < f.size(); ++v) {
    if (f[v] < 0) continue;
    gids[k] = static_cast<ZOLTAN_ID_TYPE>(v);
    parts[k++] = f[v];
  }
  *ierr = ZOLTAN_OK;
}

void start_parts(void* data, int, int, int count, ZOLTAN_ID_PTR gids, ZOLTAN_ID_PTR, int* parts, int* ierr) {
  const auto& start = graph(data).start_part;
  for (int k = 0; k < count; ++k) parts[k] = static_cast<int>(start[gids[k]]);
  *ierr = ZOLTAN_OK;
}

struct ZoltanFree {
  void operator()(Zoltan_Struct* z) const { Zoltan_Destroy(&z); }
};

void set(Zoltan_Struct* z, const char* name, const std::string& value) {
  if (Zoltan_Set_Param(z, name, value.c_str()) != ZOLTAN_OK)
    throw DaemonError(std::string("Zoltan refused ") + name + " = " + value);
}

}  // namespace

std::vector<uint32_t> partition_hypergraph(const Hypergraph& h, const HypergraphOptions& o) {
  if (h.pins.size() > static_cast<size_t>(INT32_MAX))
    throw DaemonError("the hypergraph has more pins than Zoltan's int counts");
  start_mpi_once();
  float version = 0;
  if (Zoltan_Initialize(0, nullptr, &version) != ZOLTAN_OK) throw DaemonError("Zoltan_Initialize failed");
  std::unique_ptr<Zoltan_Struct, ZoltanFree> z(Zoltan_Create(MPI_COMM_SELF));
  set(z.get(), "DEBUG_LEVEL", "0");
  set(z.get(), "LB_METHOD", "HYPERGRAPH");
  set(z.get(), "HYPERGRAPH_PACKAGE", "PHG");
  set(z.get(), "LB_APPROACH", h.start_part.empty() ? "PARTITION" : "REFINE");
  set(z.get(), "NUM_GLOBAL_PARTS", std::to_string(o.parts));
  set(z.get(), "IMBALANCE_TOL", std::to_string(o.imbalance));
  set(z.get(), "RETURN_LISTS", "PARTS");
  set(z.get(), "OBJ_WEIGHT_DIM", "1");
  set(z.get(), "EDGE_WEIGHT_DIM", "0");
  set(z.get(), "SEED", std::to_string(o.seed % 2147483647u));
  void* data = const_cast<Hypergraph*>(&h);  // Zoltan's callbacks take void*; they only read
  Zoltan_Set_Num_Obj_Fn(z.get(), num_obj, data);
  Zoltan_Set_Obj_List_Fn(z.get(), obj_list, data);
  Zoltan_Set_HG_Size_CS_Fn(z.get(), hg_size, data);
  Zoltan_Set_HG_CS_Fn(z.get(), hg_cs, data);
  if (!h.start_part.empty()) Zoltan_Set_Part_Multi_Fn(z.get(), start_parts, data);
  if (!h.fixed_part.empty()) {
    Zoltan_Set_Num_Fixed_Obj_Fn(z.get(), num_fixed, data);
    Zoltan_Set_Fixed_Obj_List_Fn(z.get(), fixed_list, data);
  }
  int changes = 0, gid_entries = 0, lid_entries = 0, imports = 0, exports = 0;
  ZOLTAN_ID_PTR import_gids = nullptr, import_lids = nullptr, export_gids = nullptr, export_lids = nullptr;
  int *import_procs = nullptr, *import_parts = nullptr, *export_procs = nullptr, *export_parts = nullptr;
  const int rc = Zoltan_LB_Partition(z.get(), &changes, &gid_entries, &lid_entries, &imports, &import_gids,
                                     &import_lids, &import_procs, &import_parts, &exports, &export_gids,
                                     &export_lids, &export_procs, &export_parts);
  std::vector<uint32_t> part(h.vertices(), 0);
  if (rc == ZOLTAN_OK) {
    for (int k = 0; k < exports; ++k) part[export_gids[k]] = static_cast<uint32_t>(export_parts[k]);
  }
  Zoltan_LB_Free_Part(&import_gids, &import_lids, &import_procs, &import_parts);
  Zoltan_LB_Free_Part(&export_gids, &export_lids, &export_procs, &export_parts);
  if (rc != ZOLTAN_OK)
    throw DaemonError("Zoltan's hypergraph partitioning failed (code " + std::to_string(rc) + ")");
  return part;
}

uint64_t hypergraph_cut(const Hypergraph& h, const std::vector<uint32_t>& part) {
  uint64_t cut = 0;
  for (size_t k = 0; k < h.nets(); ++k) {
    uint64_t parts = 0;
    for (uint32_t p = h.net_offsets[k]; p < h.net_offsets[k + 1]; ++p)
      parts |= uint64_t{1} << part[h.pins[p]];
    cut += static_cast<uint64_t>(std::popcount(parts)) - 1;
  }
  return cut;
}

}  // namespace gossipd::daemon
