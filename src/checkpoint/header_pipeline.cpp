// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/header_pipeline.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace qpatch::checkpoint {

void read_headers_in_order(const std::filesystem::path& dir,
                           const std::vector<std::string>& names,
                           const safetensors::ReaderOptions& options,
                           const HeaderConsumer& consume,
                           unsigned threads) {
  const unsigned hardware = std::max(1U, std::thread::hardware_concurrency());
  const auto workers =
      static_cast<unsigned>(std::min<size_t>(threads == 0 ? hardware : threads, names.size() / 2));
  if (workers <= 1) {
    safetensors::HeaderParser parser;
    for (size_t i = 0; i < names.size(); ++i) {
      auto result = parser.read(dir / names[i], names[i], options);
      consume(i, result);
      if (result) {
        parser.reuse(std::move(result->tensors));
      }
    }
    return;
  }
  std::vector<std::optional<Result<safetensors::Header>>> slots(names.size());
  std::mutex mutex;
  std::condition_variable ready; // a slot was filled, or a worker failed
  std::condition_variable room;  // the consumer moved on, or stopped
  std::atomic<size_t> next_claim{0};
  size_t consumed = 0;        // guarded by mutex
  bool stop = false;          // guarded by mutex: the consumer gave up (it threw)
  std::exception_ptr failure; // guarded by mutex: what a worker threw (bad_alloc, in practice)
  std::vector<std::vector<safetensors::TensorEntry>> spare; // guarded by mutex: consumed lists
  // Workers stay at most this far ahead of the consumer: a bound on waiting headers.
  const size_t window = size_t{4} * workers;
  const auto work = [&] {
    try {
      safetensors::HeaderParser parser;
      for (size_t i = next_claim++; i < names.size(); i = next_claim++) {
        {
          std::unique_lock lock(mutex);
          room.wait(lock, [&] { return stop || i < consumed + window; });
          if (stop) {
            return;
          }
          if (!spare.empty()) {
            parser.reuse(std::move(spare.back()));
            spare.pop_back();
          }
        }
        auto result = parser.read(dir / names[i], names[i], options);
        {
          const std::lock_guard lock(mutex);
          slots[i].emplace(std::move(result));
        }
        ready.notify_all();
      }
    } catch (...) {
      const std::lock_guard lock(mutex);
      failure = std::current_exception();
      ready.notify_all();
    }
  };
  std::vector<std::thread> pool;
  // Threads are joined however this ends; an exception from a worker or from `consume` is
  // rethrown here, on the caller's thread, once every worker has stopped.
  const auto finish = [&] {
    {
      const std::lock_guard lock(mutex);
      stop = true;
    }
    room.notify_all();
    for (std::thread& thread : pool) {
      thread.join();
    }
  };
  // A thread that cannot be started (EAGAIN under ulimit -v or -u) must not leave the started
  // ones joinable: std::thread's destructor would call std::terminate.
  try {
    pool.reserve(workers);
    for (unsigned w = 0; w < workers; ++w) {
      pool.emplace_back(work);
    }
  } catch (...) {
    finish();
    throw;
  }
  try {
    for (size_t i = 0; i < names.size(); ++i) {
      std::optional<Result<safetensors::Header>> result;
      {
        std::unique_lock lock(mutex);
        ready.wait(lock, [&] { return slots[i].has_value() || failure != nullptr; });
        if (!slots[i].has_value()) {
          std::rethrow_exception(failure);
        }
        result = std::move(slots[i]);
        slots[i].reset();
        consumed = i + 1;
      }
      room.notify_all();
      consume(i, *result);
      if (*result) {
        const std::lock_guard lock(mutex);
        spare.push_back(std::move((*result)->tensors));
      }
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

} // namespace qpatch::checkpoint
