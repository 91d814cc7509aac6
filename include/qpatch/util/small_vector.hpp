// SPDX-License-Identifier: Apache-2.0
// A vector of trivially copyable values that keeps its first N elements inline. A 1T-parameter
// checkpoint has ~200k tensors and ~70k modules; one heap block per shape or per module's tensor
// list would dominate both time and peak memory.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace qpatch::util {

template <class T, size_t N> class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> values) {
    for (const T& value : values) {
      push_back(value);
    }
  }
  template <class Range> static SmallVector from(const Range& range) {
    SmallVector out;
    for (const auto& value : range) {
      out.push_back(value);
    }
    return out;
  }

  void push_back(T value) {
    if (m_size < N) {
      m_inline[m_size] = value;
    } else {
      if (m_size == N) {
        m_heap.assign(m_inline.begin(), m_inline.end());
      }
      m_heap.push_back(value);
    }
    ++m_size;
  }
  void clear() {
    m_size = 0;
    m_heap.clear();
  }

  size_t size() const { return m_size; }
  bool empty() const { return m_size == 0; }
  const T* data() const { return m_size <= N ? m_inline.data() : m_heap.data(); }
  T* data() { return m_size <= N ? m_inline.data() : m_heap.data(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + m_size; }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[m_size - 1]; }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const SmallVector& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

private:
  std::array<T, N> m_inline{};
  std::vector<T> m_heap;
  size_t m_size = 0;
};

} // namespace qpatch::util
