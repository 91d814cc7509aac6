// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/names.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace qpatch::util {
namespace {

// last_dot reads eight bytes at a time from the end: it must find what rfind finds for every
// length and every place of the last dot, with dots and look-alike bytes around it.
TEST(Names, LastDotIsWhatRfindFinds) {
  const std::string base = "model.layers.60.mlp.experts.383.down_proj.weight_scale";
  for (size_t size = 0; size <= base.size(); ++size) {
    for (const char filler : {'a', '.', '\xAE', '/', '\x2F', '\x6E'}) {
      std::string text = base.substr(0, size);
      for (size_t at = 0; at <= size; ++at) {
        std::string variant = text;
        if (at < size) {
          variant[at] = filler;
        }
        // Alone in the heap, so a read outside the name would show under ASan.
        const std::unique_ptr<char[]> copy(new char[variant.size() + 1]);
        std::memcpy(copy.get(), variant.data(), variant.size());
        const std::string_view view(copy.get(), variant.size());
        ASSERT_EQ(last_dot(view), view.rfind('.')) << variant;
      }
    }
  }
  EXPECT_EQ(last_dot("no_dots_in_this_name_at_all"), std::string_view::npos);
  EXPECT_EQ(last_dot(""), std::string_view::npos);
  EXPECT_EQ(last_component("mtp.layers.0.mlp.up_proj"), "up_proj");
}

} // namespace
} // namespace qpatch::util
