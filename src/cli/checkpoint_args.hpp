// SPDX-License-Identifier: Apache-2.0
// Every DIR argument is resolved and checked before anything is judged or written: one word that
// is not a checkpoint (a typo of a subcommand, a missing directory) makes the whole command a
// usage error, so a slip of the keyboard never patches the checkpoints named beside it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace qpatch::cli {

// The subcommands, for "did you mean" and for spotting one written after its arguments.
const std::vector<std::string>& subcommand_names();

// Report on `err` every argument of `dirs` that is not a checkpoint directory (a directory that
// holds config.json); return whether all are.
bool check_checkpoint_dirs(const std::vector<std::string>& dirs, std::ostream& err);

// Before CLI11 sees the words: a first word within edit distance 2 of a subcommand that names
// nothing on disk ("inpsect"), or a subcommand written after a DIR ("qpatch DIR inspect").
// Report it on `err` and return false; true when the words look right.
bool check_command_word(const std::vector<std::string>& args, std::ostream& err);

} // namespace qpatch::cli
