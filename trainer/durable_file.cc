#include "trainer/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gossipd::trainer {
namespace {

namespace fs = std::filesystem;

std::string errno_text(const std::string& what, const fs::path& path) {
  return "cannot " + what + " " + path.string() + ": " + std::strerror(errno);
}

// Writes all of `data` to a new file and fsyncs it; removes it on failure.
void write_file_synced(const fs::path& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(errno_text("create", path));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string e = errno_text("write", path);
      ::close(fd);
      ::unlink(path.c_str());
      throw std::runtime_error(e);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string e = errno_text("fsync", path);
    ::close(fd);
    ::unlink(path.c_str());
    throw std::runtime_error(e);
  }
  ::close(fd);
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(errno_text("open directory", dir));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error(errno_text("fsync directory", dir));
}

}  // namespace

void write_file_durably(const fs::path& target, std::string_view data) {
  // Named by the process: two processes writing the same target (a cache
  // they share) do not write into one temporary.
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid());
  write_file_synced(tmp, data);
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + target.string() + ": " +
                             ec.message());
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fsync_dir(dir);
}

}  // namespace gossipd::trainer
