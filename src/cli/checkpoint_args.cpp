// SPDX-License-Identifier: Apache-2.0
#include "checkpoint_args.hpp"

#include "diagnostics.hpp"
#include "did_you_mean.hpp"

#include <algorithm>
#include <filesystem>

namespace qpatch::cli {
namespace fs = std::filesystem;

namespace {

bool is_subcommand(const std::string& word) {
  const auto& names = subcommand_names();
  return std::find(names.begin(), names.end(), word) != names.end();
}

// Options of the everyday action that take a value: the word after them is not a DIR.
bool takes_value(const std::string& word) {
  return word == "--only" || word == "--engine" || word == "--color";
}

} // namespace

const std::vector<std::string>& subcommand_names() {
  static const std::vector<std::string> names{"inspect", "explain", "restore", "graft"};
  return names;
}

bool check_checkpoint_dirs(const std::vector<std::string>& dirs, std::ostream& err) {
  bool all_good = true;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    const fs::file_status status = fs::status(dir, ec);
    std::string problem;
    if (is_subcommand(dir) && !fs::exists(status)) {
      problem = "'" + dir + "' is a command: write it first, as in 'qpatch " + dir + " DIR'";
    } else if (!fs::exists(status)) {
      const auto command = closest(dir, subcommand_names());
      problem = command ? "unknown command '" + dir + "'; did you mean '" + *command + "'?"
                        : dir + ": no such directory";
    } else if (!fs::is_directory(status)) {
      problem = dir + ": not a directory";
    } else if (!fs::exists(fs::path(dir) / "config.json", ec)) {
      problem = display_path(dir, "config.json") + ": no such file (not a checkpoint directory)";
    }
    if (!problem.empty()) {
      report(err, Level::error, problem);
      all_good = false;
    }
  }
  return all_good;
}

bool check_command_word(const std::vector<std::string>& args, std::ostream& err) {
  bool seen_positional = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      return true;
    }
    if (!word.empty() && word[0] == '-') {
      i += takes_value(word) ? size_t{1} : size_t{0};
      continue;
    }
    std::error_code ec;
    const bool on_disk = fs::exists(word, ec);
    if (is_subcommand(word)) {
      if (seen_positional && !on_disk) {
        report(err,
               Level::error,
               "'" + word + "' is a command: write it first, as in 'qpatch " + word + " DIR'");
        return false;
      }
      return true; // CLI11 takes it from here
    }
    if (!seen_positional && !on_disk) {
      if (const auto command = closest(word, subcommand_names())) {
        report(
            err, Level::error, "unknown command '" + word + "'; did you mean '" + *command + "'?");
        return false;
      }
    }
    seen_positional = true;
  }
  return true;
}

} // namespace qpatch::cli
