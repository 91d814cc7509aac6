// SPDX-License-Identifier: Apache-2.0
// The exit-status contract every subcommand shares. Shell scripts depend on these numbers; they
// are documented in --help and README.md and pinned by golden tests.
#pragma once

namespace qpatch::cli {

enum class ExitCode : int {
  ok = 0,               // nothing to do, or the changes were written
  findings = 1,         // still inconsistent (with --check/--dry-run: a patch is needed)
  usage = 2,            // bad command line (CLI11's own codes are remapped to this)
  invalid_input = 3,    // a checkpoint could not be read or is invalid; nothing written
  write_failed = 4,     // a write failed; the originals are intact
  rollback_failed = 5,  // a write failed and so did restoring: the report lists each file
  out_of_resources = 6, // out of memory or a resource limit (ulimit); nothing written
  internal = 70,        // a bug (EX_SOFTWARE)
};

inline int to_int(ExitCode code) {
  return static_cast<int>(code);
}

} // namespace qpatch::cli
