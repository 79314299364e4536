#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace gossipd::protocol {

// A system call on a segment failed: what, and its errno.
struct ShmError : std::runtime_error {
  ShmError(const std::string& what, int error) : std::runtime_error(what), code(error) {}
  int code;
};

// Memory two processes on one host share: made by one (shm_open with a
// fresh name, O_EXCL, mode 0600, its pages taken at once), opened by the
// other, which unlinks the name (the mapping lives on; nothing is left in
// /dev/shm). The name carries its maker's pid, "/gossipd-<pid>-<32 hex>":
// the first segment a process makes sweeps the names of makers that are
// gone (killed between making and the peer's open), so none outlives a run.
// Throws ShmError (a system call) or std::runtime_error naming what failed.
class ShmMapping {
 public:
  static std::unique_ptr<ShmMapping> create(size_t bytes);
  // Refuses a name not of our form or a segment not of `bytes` bytes.
  static std::unique_ptr<ShmMapping> open(const std::string& name, size_t bytes);
  ~ShmMapping();
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;

  const std::string& name() const { return name_; }
  std::byte* base() const { return base_; }
  size_t bytes() const { return bytes_; }
  void unlink();  // the name goes (done once; the mapping stays)

  // Removes /dev/shm names of ours whose maker is no longer running; how many.
  static size_t sweep_orphans();

 private:
  ShmMapping(std::string name, std::byte* base, size_t bytes);
  std::string name_;
  bool linked_ = true;
  std::byte* base_;
  size_t bytes_;
};

}  // namespace gossipd::protocol
