// SPDX-License-Identifier: Apache-2.0
// One qpatch at a time per checkpoint: an flock(2) on DIR itself (on DIR/.qpatch/lock where the
// file system cannot flock a directory), held from before a run reads the checkpoint until its
// commit is over, so two runs never judge and write the same files at once. Taking it writes
// nothing; the one that waits finds the holder's PID in /proc/locks. flock, not fcntl locks:
// the lock belongs to the open file, so closing any other descriptor of the file (as
// json::read_file does) never drops it, and the kernel frees it when a holder dies.
#pragma once

#include <qpatch/error.hpp>

#include <chrono>
#include <filesystem>

namespace qpatch::commit {

class CheckpointLock {
public:
  // Take the lock of `dir`, waiting at most `wait`; an error (ErrorCode::write_failed, on
  // `dir`) names the holder.
  static Result<CheckpointLock> acquire(const std::filesystem::path& dir,
                                        std::chrono::milliseconds wait);
  CheckpointLock(CheckpointLock&& other) noexcept;
  CheckpointLock& operator=(CheckpointLock&&) = delete;
  CheckpointLock(const CheckpointLock&) = delete;
  ~CheckpointLock();

private:
  CheckpointLock(std::filesystem::path dir, int fd) : m_dir(std::move(dir)), m_fd(fd) {}
  std::filesystem::path m_dir;
  int m_fd = -1;
};

// How long a run waits for another: QPATCH_LOCK_WAIT_MS if set, else 5 seconds.
std::chrono::milliseconds lock_wait();

} // namespace qpatch::commit
