// SPDX-License-Identifier: Apache-2.0
#include "support/spawn.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <string_view>

extern char** environ;

namespace qpatch::test {

Spawned spawn_qpatch(const std::vector<std::string>& args,
                     const std::vector<std::string>& env,
                     const std::filesystem::path& log) {
  std::vector<std::string> all{QPATCH_EXE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : all) {
    argv.push_back(arg.data());
  }
  argv.push_back(nullptr);
  std::vector<std::string> environment(env);
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("QPATCH_")) {
      continue;
    }
    environment.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& entry : environment) {
    envp.push_back(entry.data());
  }
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  Spawned spawned{-1, log};
  EXPECT_EQ(posix_spawn(&spawned.pid, QPATCH_EXE, &actions, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  return spawned;
}

int wait_for(const Spawned& spawned) {
  int status = 0;
  EXPECT_EQ(::waitpid(spawned.pid, &status, 0), spawned.pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

} // namespace qpatch::test
