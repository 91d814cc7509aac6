// SPDX-License-Identifier: Apache-2.0
// Whether a module of DIR already holds DONOR's bytes: a graft takes the head whole, norms
// included (AWQ and SmoothQuant fold scales into them), but rewrites nothing that is already the
// donor's, so a second graft stays a no-op.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/graft/selection.hpp>

#include <cstdint>

namespace qpatch::graft {

// True when module `a` of `first` and module `b` of `second` have the same tensors (parameter
// names, dtypes, shapes) and data whose XXH3-64 hashes agree (hash_range, in bounded chunks).
Result<bool>
same_module_bytes(const Checkpoint& first, uint32_t a, const Checkpoint& second, uint32_t b);

} // namespace qpatch::graft
