// SPDX-License-Identifier: Apache-2.0
// The real qpatch binary as a child process, for what the in-process runner cannot show: exit
// codes of signals, resource limits, a process killed mid-commit.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::test {

struct Spawned {
  pid_t pid = -1;
  std::filesystem::path out; // its stdout and stderr
};

// Start the qpatch binary with `args` and extra environment `env` ("NAME=value"), on top of this
// process's environment without its QPATCH_ variables (fault seams stay off unless `env` sets
// them); its stdout and stderr go to `log`.
Spawned spawn_qpatch(const std::vector<std::string>& args,
                     const std::vector<std::string>& env,
                     const std::filesystem::path& log);

// Wait for it: its exit code, or 1000 + the signal that killed it.
int wait_for(const Spawned& spawned);

} // namespace qpatch::test
