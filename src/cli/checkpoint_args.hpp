// SPDX-License-Identifier: Apache-2.0
// Every DIR argument is resolved and checked before anything is judged or written: one word that
// is not a checkpoint (a typo of a subcommand, a missing directory) makes the whole command a
// usage error, so a slip of the keyboard never patches the checkpoints named beside it.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace qpatch::cli {

// The subcommands, for "did you mean" and for spotting one written after its arguments.
const std::vector<std::string>& subcommand_names();

// `--revision REF` on `cmd`: the branch, tag or commit (full or a unique prefix) that repo-id
// arguments resolve to in the Hugging Face cache.
void add_revision_option(CLI::App& cmd, std::string& revision);

// Replace every argument of `dirs` that names nothing on disk but reads as a Hub repo id
// ("Org/Name", "Org/Name@REV") by its snapshot in the local Hugging Face cache (hub/hub_cache.hpp:
// huggingface_hub's own rules), so each subcommand gets repo ids for free. A repo id the cache
// does not hold is reported on `err`, with where qpatch looked and the `hf download` command
// that fetches it; return whether all resolved. Unless `quiet`, note each resolution (repo id,
// revision, snapshot) on `err`. `revisions`, when given, gets each resolved snapshot's
// directory with the revision it was asked by (@REV, --revision, else "main").
bool resolve_repo_ids(std::vector<std::string>& dirs,
                      const std::string& revision,
                      bool quiet,
                      std::ostream& err,
                      std::map<std::string, std::string>* revisions = nullptr);

// -r: every checkpoint below each root of `roots` (a Hub repo id: its folder in the cache, every
// snapshot); nothing, with the reason on `err`, when a root is missing or holds none.
std::optional<std::vector<std::string>> find_below_roots(const std::vector<std::string>& roots,
                                                         const std::string& revision,
                                                         std::ostream& err);

// Report on `err` every argument of `dirs` that is not a checkpoint directory (a directory that
// holds config.json); return whether all are.
bool check_checkpoint_dirs(const std::vector<std::string>& dirs, std::ostream& err);

// Before CLI11 sees the words: a first word within edit distance 2 of a subcommand that names
// nothing on disk ("inpsect"), or a subcommand written after a DIR ("qpatch DIR inspect").
// Report it on `err` and return false; true when the words look right.
bool check_command_word(const std::vector<std::string>& args, std::ostream& err);

// The path of `dir` as the labels of one diff for several checkpoints: relative to the current
// directory, so `qpatch --dry-run ck1 ck2 | git apply` patches both from here; "" for one
// checkpoint (paths relative to DIR, as `patch -p1 -d DIR` wants).
std::string diff_prefix(const std::string& dir, bool several);

} // namespace qpatch::cli
