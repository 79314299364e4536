#pragma once

#include <filesystem>
#include <string_view>

namespace gossipd::trainer {

// Writes `data` to `target` so that a crash leaves either the old file or the
// new one whole, never a torn one: a temporary file next to it (TARGET.tmp.PID),
// fsync, rename over the target, fsync of the directory. Throws
// std::runtime_error naming the file and the system's reason.
void write_file_durably(const std::filesystem::path& target, std::string_view data);

}  // namespace gossipd::trainer
