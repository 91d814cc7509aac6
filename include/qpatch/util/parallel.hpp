// SPDX-License-Identifier: Apache-2.0
// Run independent jobs on the machine's cores: each engine version judges a config on its own
// (its own rules object; patterns are compiled once and shared, thread-safe), and a fix of a
// 1T-parameter MoE judges 7 versions in each of its rounds.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace qpatch::util {

// Call job(i) for every i in [0, count), on up to hardware_concurrency() threads (the calling
// thread is one of them). Returns when every job has; the first exception a job threw is
// rethrown here (std::bad_alloc, for one), after the others finished.
template <typename Job> void parallel_for(size_t count, const Job& job) {
  const size_t threads =
      std::min<size_t>(count, std::max<size_t>(1, std::thread::hardware_concurrency()));
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) {
      job(i);
    }
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        job(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        failure = failure ? failure : std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    helpers.emplace_back(work);
  }
  work();
  for (std::thread& helper : helpers) {
    helper.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
}

} // namespace qpatch::util
