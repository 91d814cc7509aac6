// SPDX-License-Identifier: Apache-2.0
// The library's one error type and Result<T>. Bad input is expected, so it is a value here; an
// exception is a bug. Every Error names the file, the byte offset when one exists, and the tensor,
// module or JSON pointer it concerns, so a user can go straight to the bytes at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace qpatch {

// The reference reader's error variants first (safetensors/src/tensor.rs), then qpatch's own.
// The spellings reach --json: a rename is a schema change.
enum class ErrorCode {
  header_too_small,
  header_too_large,
  invalid_header_length,
  invalid_header,
  invalid_header_deserialization,
  invalid_offset,
  validation_overflow,
  misaligned_slice,
  tensor_invalid_info,
  metadata_incomplete_buffer,
  duplicate_key,    // a key twice in one JSON object: stricter than the reference, on purpose
  io_error,         // open/read/stat failed
  not_a_directory,  // the checkpoint path is not a directory
  missing_config,   // no config.json
  invalid_json,     // a config or index file that is not strict JSON
  invalid_index,    // model.safetensors.index.json has the wrong shape
  unsafe_path,      // an index names a file outside the checkpoint directory
  limit_exceeded,   // a size or count cap (limits.hpp)
  missing_file,     // a file the index names does not exist
  duplicate_tensor, // one tensor name in two files
  invalid_pattern,  // a regex qpatch cannot compile
  changed_on_disk,  // a file changed between reading and writing it
  write_failed,     // a write failed; every file is as it was
  rollback_failed,  // a write failed and so did restoring: files may be half-changed
  internal,         // a planned edit failed its own verification: a bug, nothing written
  unknown_module,   // a module name (qpatch explain) that the checkpoint does not hold
  graft_refused,    // qpatch graft cannot graft: a module missing or of another shape in DONOR
  no_space,         // qpatch graft: the file system lacks the free space the new shards need
  remote_failed,    // --remote: the Hub refused or did not answer (gated, not found, timeout)
};

// Return the stable spelling of `code` ("invalid_offset").
std::string_view to_string(ErrorCode code);

struct Error {
  ErrorCode code{};
  std::string path;               // the file, as the user named it (relative to the checkpoint)
  std::optional<uint64_t> offset; // absolute byte offset in that file
  std::string subject;            // tensor name, module name or JSON pointer; may be empty
  std::string message;            // lowercase, no final period

  // Return "<path>: byte <offset>: tensor '<subject>': <message>", leaving out absent parts.
  // `subject_kind` names what the subject is ("tensor", "module", "at").
  std::string to_string() const;
  std::string subject_kind = "tensor";
};

template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : m_value(std::move(value)) {} // NOLINT: implicit by design, like std::expected
  Result(Error error) : m_value(std::move(error)) {} // NOLINT

  explicit operator bool() const { return m_value.index() == 0; }
  bool ok() const { return m_value.index() == 0; }
  T& operator*() { return std::get<0>(m_value); }
  const T& operator*() const { return std::get<0>(m_value); }
  T* operator->() { return &std::get<0>(m_value); }
  const T* operator->() const { return &std::get<0>(m_value); }
  const Error& error() const { return std::get<1>(m_value); }
  Error take_error() { return std::move(std::get<1>(m_value)); }
  T take_value() { return std::move(std::get<0>(m_value)); }

private:
  std::variant<T, Error> m_value;
};

using Status = Result<std::monostate>;
inline Status ok_status() {
  return Status(std::monostate{});
}

Error make_error(ErrorCode code,
                 std::string path,
                 std::optional<uint64_t> offset,
                 std::string subject,
                 std::string message);

} // namespace qpatch

#define QP_CONCAT_INNER(a, b) a##b
#define QP_CONCAT(a, b) QP_CONCAT_INNER(a, b)
// Bind `decl` to the value of `expr` (a Result), or return its error from the enclosing function.
#define QP_TRY_ASSIGN(decl, expr)                                                                  \
  auto QP_CONCAT(qp_result_, __LINE__) = (expr);                                                   \
  if (!QP_CONCAT(qp_result_, __LINE__)) {                                                          \
    return QP_CONCAT(qp_result_, __LINE__).take_error();                                           \
  }                                                                                                \
  decl = QP_CONCAT(qp_result_, __LINE__).take_value()
