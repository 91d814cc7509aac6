// SPDX-License-Identifier: Apache-2.0
// Error spellings and the one-line rendering every front end uses.
#include <qpatch/error.hpp>

namespace qpatch {

std::string_view to_string(ErrorCode code) {
  switch (code) {
  case ErrorCode::header_too_small:
    return "header_too_small";
  case ErrorCode::header_too_large:
    return "header_too_large";
  case ErrorCode::invalid_header_length:
    return "invalid_header_length";
  case ErrorCode::invalid_header:
    return "invalid_header";
  case ErrorCode::invalid_header_deserialization:
    return "invalid_header_deserialization";
  case ErrorCode::invalid_offset:
    return "invalid_offset";
  case ErrorCode::validation_overflow:
    return "validation_overflow";
  case ErrorCode::misaligned_slice:
    return "misaligned_slice";
  case ErrorCode::tensor_invalid_info:
    return "tensor_invalid_info";
  case ErrorCode::metadata_incomplete_buffer:
    return "metadata_incomplete_buffer";
  case ErrorCode::duplicate_key:
    return "duplicate_key";
  case ErrorCode::io_error:
    return "io_error";
  case ErrorCode::not_a_directory:
    return "not_a_directory";
  case ErrorCode::missing_config:
    return "missing_config";
  case ErrorCode::invalid_json:
    return "invalid_json";
  case ErrorCode::invalid_index:
    return "invalid_index";
  case ErrorCode::unsafe_path:
    return "unsafe_path";
  case ErrorCode::limit_exceeded:
    return "limit_exceeded";
  case ErrorCode::missing_file:
    return "missing_file";
  case ErrorCode::duplicate_tensor:
    return "duplicate_tensor";
  case ErrorCode::invalid_pattern:
    return "invalid_pattern";
  case ErrorCode::changed_on_disk:
    return "changed_on_disk";
  case ErrorCode::write_failed:
    return "write_failed";
  case ErrorCode::rollback_failed:
    return "rollback_failed";
  case ErrorCode::internal:
    return "internal";
  case ErrorCode::unknown_module:
    return "unknown_module";
  case ErrorCode::graft_refused:
    return "graft_refused";
  case ErrorCode::no_space:
    return "no_space";
  case ErrorCode::remote_failed:
    return "remote_failed";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string out = path;
  if (offset) {
    out += out.empty() ? "" : ": ";
    out += "byte " + std::to_string(*offset);
  }
  if (!subject.empty()) {
    out += out.empty() ? "" : ": ";
    if (subject_kind == "at") {
      out += "at " + subject;
    } else {
      out += subject_kind + " '" + subject + "'";
    }
  }
  out += out.empty() ? "" : ": ";
  out += message;
  return out;
}

Error make_error(ErrorCode code,
                 std::string path,
                 std::optional<uint64_t> offset,
                 std::string subject,
                 std::string message) {
  Error error;
  error.code = code;
  error.path = std::move(path);
  error.offset = offset;
  error.subject = std::move(subject);
  error.message = std::move(message);
  return error;
}

} // namespace qpatch
