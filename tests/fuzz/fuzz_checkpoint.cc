// Checkpoint files: any bytes on disk are read back whole or refused with
// CheckpointError, never crash the worker at start.
#include <unistd.h>

#include <cassert>
#include <cstdio>
#include <fstream>
#include <string>

#include "daemon/cluster/checkpoint.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One file per process, removed when it exits (libFuzzer ends with exit()).
  static const struct File {
    std::string path = "/dev/shm/gossipd-fuzz-ckpt-" + std::to_string(getpid()) + ".gsck";
    ~File() { std::remove(path.c_str()); }
  } file;
  const std::string& path = file.path;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    auto c = daemon::read_checkpoint(path);
    assert(c.state.params.size() == c.state.header.parameter_floats());
  } catch (const daemon::CheckpointError&) {
  }
  return 0;
}
