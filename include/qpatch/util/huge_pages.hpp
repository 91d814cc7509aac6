// SPDX-License-Identifier: Apache-2.0
// Memory for the few large arrays of a checkpoint's inventory (tensor records, modules, hash
// tables): on a 1T-parameter layout they hold ~50 MB, and first-touch page faults on 4 KiB pages
// were a quarter of `qpatch --check`'s CPU time (18k faults). Blocks of 1 MiB or more are mapped
// 2 MiB-aligned and advised MADV_HUGEPAGE, so the kernel backs them with transparent huge pages
// where it can (one fault per 2 MiB: zeroing a whole huge page costs less than the 256 faults of
// a 1 MiB block); smaller blocks come from operator new as usual. Where THP is off or the advice
// is refused, the mapping works as ordinary pages.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace qpatch::util {

inline constexpr size_t k_huge_page_threshold = size_t{1} << 20;

// Allocate `bytes` (any size); the caller passes the same `bytes` to release.
void* allocate_large(size_t bytes);
void release_large(void* block, size_t bytes) noexcept;

template <class T> struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U> HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(size_t count) {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    if (count > static_cast<size_t>(-1) / sizeof(T)) {
      throw std::bad_array_new_length();
    }
    return static_cast<T*>(allocate_large(count * sizeof(T)));
  }
  void deallocate(T* block, size_t count) noexcept { release_large(block, count * sizeof(T)); }
  template <class U> bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

// A vector for arrays that grow to megabytes (one element per tensor or module).
template <class T> using LargeVector = std::vector<T, HugePageAllocator<T>>;

// Hands out byte ranges cut from shared 4 MiB blocks (huge pages, as above). Each shard's tensor
// names (~170 KB on a 1T-parameter checkpoint, 11 MB in all) used to be one operator new block of
// their own: fresh 4 KiB pages, zero-filled, ~2,700 page faults. Not thread-safe: one arena per
// reading thread. Blocks live as long as any range cut from them.
class ByteArena {
public:
  static constexpr size_t k_block_size = size_t{4} << 20; // requests over a quarter get their own
  // `bytes` uninitialised bytes; the pointer shares ownership of their block.
  std::shared_ptr<char[]> allocate(size_t bytes);

private:
  std::shared_ptr<char[]> m_block;
  size_t m_used = 0;
  size_t m_size = 0;
};

} // namespace qpatch::util
