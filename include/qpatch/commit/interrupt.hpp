// SPDX-License-Identifier: Apache-2.0
// SIGINT, SIGTERM and SIGHUP against a commit. Outside a commit nothing is written yet, so a
// signal ends the process at once (its default action). Inside one, the handler only records the
// signal: commit() checks it between steps, removes what it staged if no target was renamed yet,
// and otherwise completes the renames, so every file is whole and the journal is closed; the CLI
// then exits 128+signal. The handler is the library's; installing it is main()'s choice.
#pragma once

#include <string>

namespace qpatch::commit {

// "SIGINT", "SIGTERM", "SIGHUP", else "signal N": how reports name the signal that stopped qpatch.
std::string signal_name(int sig);

// Install the handler for SIGINT, SIGTERM and SIGHUP (SA_RESTART), and ignore SIGXFSZ (a write
// past ulimit -f then fails with EFBIG, which the writers report).
void install_interrupt_handlers();

// The signal recorded during a commit, or 0; clears it.
int take_interrupt();
// The signal recorded during the commit in progress, or 0.
int pending_interrupt();
// The first signal recorded during any commit of this process, or 0; never cleared.
int interrupt_seen();

// Marks the span in which a signal is recorded instead of acted on.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// Test-only fault injection, compiled in always so the shipped binary is the one tested: with
// QPATCH_FAULT_AT_RENAME=N, the Nth rename(2) qpatch makes raises QPATCH_FAULT_SIGNAL (KILL,
// INT, TERM or HUP; default KILL) just before it is made.
void before_rename_fault();

} // namespace qpatch::commit
