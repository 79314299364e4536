#include "protocol/shm/shm_mapping.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>

namespace gossipd::protocol {
namespace {

constexpr const char* kPrefix = "gossipd-";
constexpr size_t kNameHex = 32;

[[noreturn]] void fail(const std::string& what) {
  const int code = errno;
  throw ShmError(what + ": " + std::strerror(code), code);
}

// The maker's pid of a name of our form ("gossipd-<pid>-<hex>", without the
// slash), or -1 when it is not one.
long maker_of(const std::string& name) {
  const size_t p = std::strlen(kPrefix);
  if (name.compare(0, p, kPrefix) != 0) return -1;
  const size_t dash = name.find('-', p);
  if (dash == std::string::npos || dash == p || dash - p > 10 || name.size() != dash + 1 + kNameHex)
    return -1;
  long pid = 0;
  for (size_t i = p; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  for (size_t i = dash + 1; i < name.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return -1;
  return pid > 0 ? pid : -1;
}

std::byte* map(int fd, size_t bytes, const std::string& name) {
  // Populated now: a pipe's pages faulted in one by one as the stream first
  // goes round would cost a fault per 4 KiB for the first laps (a 32 KiB
  // allreduce 3x slower for its first 30 calls).
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) fail("mmap of " + name);
  return static_cast<std::byte*>(p);
}

}  // namespace

ShmMapping::ShmMapping(std::string name, std::byte* base, size_t bytes)
    : name_(std::move(name)), base_(base), bytes_(bytes) {}

size_t ShmMapping::sweep_orphans() {
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return 0;
  size_t removed = 0;
  while (const dirent* e = ::readdir(dir)) {
    const long pid = maker_of(e->d_name);
    if (pid < 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::string name = "/";
    name.append(e->d_name);
    if (::shm_unlink(name.c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

std::unique_ptr<ShmMapping> ShmMapping::create(size_t bytes) {
  static std::once_flag swept;
  std::call_once(swept, [] { sweep_orphans(); });
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  // Appended piece by piece: GCC 12 raises a -Wrestrict false positive
  // (PR 105329) for "/" + std::string inlined here in some unity batches.
  std::string name = "/";
  name.append(kPrefix).append(std::to_string(::getpid())).push_back('-');
  for (size_t i = 0; i < kNameHex; ++i) name += kHex[rd() % 16];
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail("shm_open of " + name);
  // The pages are taken now: a full /dev/shm is an error here, not a
  // SIGBUS at the first write into a page tmpfs cannot give.
  if (const int e = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); e != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    errno = e;
    fail("posix_fallocate of " + name);
  }
  std::byte* base = nullptr;
  try {
    base = map(fd, bytes, name);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
  return std::unique_ptr<ShmMapping>(new ShmMapping(name, base, bytes));
}

std::unique_ptr<ShmMapping> ShmMapping::open(const std::string& name, size_t bytes) {
  if (name.empty() || name[0] != '/' || maker_of(name.substr(1)) < 0)
    throw std::runtime_error("shared-memory segment name '" + name + "' is not one of ours");
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) fail("shm_open of " + name);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    throw std::runtime_error("shared-memory segment " + name + " is not " + std::to_string(bytes) + " bytes");
  }
  auto m = std::unique_ptr<ShmMapping>(new ShmMapping(name, map(fd, bytes, name), bytes));
  m->unlink();
  return m;
}

void ShmMapping::unlink() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

ShmMapping::~ShmMapping() {
  unlink();
  ::munmap(base_, bytes_);
}

}  // namespace gossipd::protocol
