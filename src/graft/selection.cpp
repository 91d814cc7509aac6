// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/open.hpp>
#include <qpatch/graft/same_bytes.hpp>
#include <qpatch/graft/selection.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace qpatch::graft {
namespace fs = std::filesystem;
using checkpoint::Module;
using checkpoint::StorageFormat;
using safetensors::Shape;

namespace {

std::string joined(const std::string& display, const std::string& file) {
  if (display.empty()) {
    return file;
  }
  return display.back() == '/' ? display + file : display + "/" + file;
}

Error refused(std::string path, const std::string& module, std::string message) {
  Error error = make_error(
      ErrorCode::graft_refused, std::move(path), std::nullopt, module, std::move(message));
  error.subject_kind = "module";
  return error;
}

// The file that holds a module's deciding tensor, as the user would open it.
std::string file_of(const Checkpoint& checkpoint, const Module& module) {
  const auto& tensor = checkpoint.inventory.tensors[module.primary];
  return joined(checkpoint.display, checkpoint.inventory.files[tensor.file].name);
}

std::optional<uint32_t>
tensor_of(const Checkpoint& checkpoint, const Module& module, std::string_view parameter) {
  for (const uint32_t t : module.tensors) {
    if (checkpoint::split_tensor_name(checkpoint.inventory.tensors[t].name).second == parameter) {
      return t;
    }
  }
  return std::nullopt;
}

// The quantization config's integer `key` (GPTQ/AWQ "bits", AutoAWQ's "w_bit").
std::optional<uint64_t> config_integer(const Checkpoint& checkpoint,
                                       std::initializer_list<const char*> keys) {
  const quant::ConfigFile* file = checkpoint.configs.active();
  if (file == nullptr) {
    return std::nullopt;
  }
  for (const char* key : keys) {
    const auto it = file->config().find(key);
    if (it != file->config().end() && it->is_number_unsigned()) {
      return it->get<uint64_t>();
    }
  }
  return std::nullopt;
}

// Read the dense shape compressed-tensors records in a module's weight_shape tensor (I64 or
// I32, rank 1, one element per dimension).
Result<Shape> read_weight_shape(const Checkpoint& checkpoint, uint32_t t) {
  const auto& tensor = checkpoint.inventory.tensors[t];
  const std::string& file = checkpoint.inventory.files[tensor.file].name;
  const std::string display = joined(checkpoint.display, file);
  safetensors::HeaderParser parser;
  QP_TRY_ASSIGN(const safetensors::Header header,
                parser.read(checkpoint.inventory.dir / file, display));
  for (const auto& entry : header.tensors) {
    if (entry.name != tensor.name) {
      continue;
    }
    const uint64_t width = entry.dtype == safetensors::Dtype::I64   ? 8
                           : entry.dtype == safetensors::Dtype::I32 ? 4
                                                                    : 0;
    const uint64_t size = entry.end - entry.begin;
    if (width == 0 || entry.shape.size() != 1 || size > 64 || size % width != 0) {
      break;
    }
    std::string bytes(size, '\0');
    const int fd = ::open((checkpoint.inventory.dir / file).c_str(), O_RDONLY | O_CLOEXEC);
    const ssize_t got =
        fd < 0 ? -1
               : ::pread(
                     fd, bytes.data(), size, static_cast<off_t>(header.data_start() + entry.begin));
    const int error = got < 0 ? errno : 0;
    if (fd >= 0) {
      ::close(fd);
    }
    if (got != static_cast<ssize_t>(size)) {
      return make_error(ErrorCode::io_error,
                        display,
                        header.data_start() + entry.begin,
                        std::string(tensor.name),
                        std::string("cannot read its data: ") +
                            (error != 0 ? std::strerror(error) : "the file ended early"));
    }
    Shape shape;
    for (uint64_t i = 0; i < size; i += width) {
      uint64_t value = 0;
      for (uint64_t b = 0; b < width; ++b) {
        value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i + b])) << (8 * b);
      }
      shape.push_back(value);
    }
    return shape;
  }
  return make_error(ErrorCode::graft_refused,
                    display,
                    std::nullopt,
                    std::string(tensor.name),
                    "is not a rank-1 I64 or I32 shape record");
}

// A module's deciding weight's shape, scaled in dimension `dim` from packed to logical.
Result<Shape> unpacked(const Checkpoint& checkpoint,
                       const Module& module,
                       size_t dim,
                       std::optional<uint64_t> per_element) {
  std::vector<uint64_t> shape = checkpoint.inventory.tensors[module.primary].shape.to_vector();
  if (!per_element || *per_element == 0 || shape.size() != 2) {
    return refused(file_of(checkpoint, module),
                   std::string(module.name),
                   "cannot tell the dense shape of its packed weight (no bits in the "
                   "quantization config)");
  }
  shape[dim] *= *per_element;
  return Shape{shape[0], shape[1]};
}

bool is_head_module(const Checkpoint& checkpoint, uint32_t m) {
  return std::find(checkpoint.head.modules.begin(), checkpoint.head.modules.end(), m) !=
         checkpoint.head.modules.end();
}

// Sizes that shape every MTP module; a head from a model where one differs cannot fit.
std::optional<uint64_t> size_field(const json::Json& config, const char* key) {
  for (const json::Json* scope :
       {&config,
        config.contains("text_config") && config["text_config"].is_object() ? &config["text_config"]
                                                                            : nullptr}) {
    if (scope != nullptr && scope->contains(key) && (*scope)[key].is_number_unsigned()) {
      return (*scope)[key].get<uint64_t>();
    }
  }
  return std::nullopt;
}

Status check_sizes_agree(const Checkpoint& dir, const Checkpoint& donor, const Selected& selected) {
  const json::Json& dir_config = dir.configs.files.front().doc;
  const json::Json& donor_config = donor.configs.files.front().doc;
  for (const char* key : {"hidden_size",
                          "intermediate_size",
                          "num_attention_heads",
                          "num_key_value_heads",
                          "head_dim",
                          "moe_intermediate_size"}) {
    const auto mine = size_field(dir_config, key);
    const auto theirs = size_field(donor_config, key);
    if (mine && theirs && *mine != *theirs) {
      const Module& module = donor.modules[selected.in_donor];
      return refused(file_of(donor, module),
                     selected.name,
                     "stored " + safetensors::format_shape(selected.logical_shape) + " for " + key +
                         " " + std::to_string(*theirs) + " (" +
                         joined(donor.display, "config.json") + "), but " +
                         joined(dir.display, "config.json") + " declares " + key + " " +
                         std::to_string(*mine));
    }
  }
  return ok_status();
}

} // namespace

Result<Checkpoint> read_checkpoint(const fs::path& dir, const std::string& display) {
  Checkpoint checkpoint;
  checkpoint.display = display;
  QP_TRY_ASSIGN(checkpoint::Opened opened, checkpoint::open(dir, display));
  if (!opened.inventory.errors.empty()) {
    return opened.inventory.errors.front();
  }
  if (opened.config_error) {
    return *opened.config_error;
  }
  checkpoint.inventory = std::move(opened.inventory);
  checkpoint.modules = std::move(opened.modules);
  checkpoint.configs = std::move(opened.configs);
  checkpoint.head = checkpoint::find_mtp_head(
      checkpoint.configs.files.front().doc, checkpoint.modules, checkpoint.inventory);
  return checkpoint;
}

Result<Shape> logical_shape(const Checkpoint& checkpoint, uint32_t m) {
  const Module& module = checkpoint.modules[m];
  const Shape& stored = checkpoint.inventory.tensors[module.primary].shape;
  if (const auto record = tensor_of(checkpoint, module, "weight_shape")) {
    return read_weight_shape(checkpoint, *record);
  }
  const uint64_t bits = config_integer(checkpoint, {"bits", "w_bit"}).value_or(0);
  std::optional<uint64_t> per_i32;
  if (bits > 0 && 32 % bits == 0) {
    per_i32 = 32 / bits;
  }
  switch (module.format) {
  case StorageFormat::dense:
  case StorageFormat::fp8:
  case StorageFormat::fp8_block:
  case StorageFormat::ct_int8:
  case StorageFormat::ct_mxfp8:
  case StorageFormat::bnb_int8:
    return stored;
  case StorageFormat::gptq: {
    // qweight [in * bits / 32, out]; the dense weight is [out, in]. g_idx, when stored, has `in`.
    QP_TRY_ASSIGN(const Shape shape, unpacked(checkpoint, module, 0, per_i32));
    const auto g_idx = tensor_of(checkpoint, module, "g_idx");
    const auto& g_idx_shape = g_idx ? checkpoint.inventory.tensors[*g_idx].shape : Shape{};
    return Shape{shape[1], g_idx_shape.size() == 1 ? g_idx_shape[0] : shape[0]};
  }
  case StorageFormat::awq: {
    // qweight [in, out * bits / 32]; the dense weight is [out, in].
    QP_TRY_ASSIGN(Shape shape, unpacked(checkpoint, module, 1, per_i32));
    return Shape{shape[1], shape[0]};
  }
  case StorageFormat::modelopt_nvfp4:
  case StorageFormat::ct_nvfp4:
  case StorageFormat::ct_mxfp4:
  case StorageFormat::mx_fp4:
    // Two FP4 values per byte along the input dimension when stored as U8; an F4 tensor's shape
    // already counts its values (safetensors #839).
    if (checkpoint.inventory.tensors[module.primary].dtype == safetensors::Dtype::F4) {
      return stored;
    }
    return unpacked(checkpoint, module, 1, 2);
  default:
    return refused(file_of(checkpoint, module),
                   std::string(module.name),
                   "cannot tell the dense shape of a weight stored " +
                       std::string(checkpoint::to_string(module.format)));
  }
}

Result<std::vector<Selected>> select_modules(const Checkpoint& dir,
                                             const Checkpoint& donor,
                                             const std::optional<engine::Pattern>& only) {
  std::map<std::string_view, uint32_t> dir_by_name;
  for (uint32_t m = 0; m < dir.modules.size(); ++m) {
    dir_by_name.emplace(dir.modules[m].name, m);
  }
  std::map<std::string_view, uint32_t> donor_by_name;
  for (uint32_t m = 0; m < donor.modules.size(); ++m) {
    donor_by_name.emplace(donor.modules[m].name, m);
  }
  const auto wanted = [&](std::string_view name, bool in_head) {
    if (!only) {
      return in_head;
    }
    const auto matched = only->matches(name, engine::MatchMode::search);
    return matched.value_or(false);
  };
  std::vector<Selected> out;
  // Modules DIR stores quantized.
  for (uint32_t m = 0; m < dir.modules.size(); ++m) {
    const Module& module = dir.modules[m];
    if (!checkpoint::is_quantized(module.format) || !wanted(module.name, is_head_module(dir, m))) {
      continue;
    }
    const auto found = donor_by_name.find(module.name);
    if (found == donor_by_name.end()) {
      return refused(donor.display,
                     std::string(module.name),
                     "not in this checkpoint, but " + file_of(dir, module) + " stores it " +
                         std::string(checkpoint::to_string(module.format)) +
                         "; graft from the base model the checkpoint was quantized from");
    }
    out.push_back({std::string(module.name), m, found->second, {}});
    QP_TRY_ASSIGN(out.back().logical_shape, logical_shape(dir, m));
  }
  // Modules DIR lacks (a dropped head).
  for (uint32_t m = 0; m < donor.modules.size(); ++m) {
    const Module& module = donor.modules[m];
    if (dir_by_name.count(module.name) != 0 || !wanted(module.name, is_head_module(donor, m))) {
      continue;
    }
    out.push_back({std::string(module.name), std::nullopt, m, {}});
    out.back().logical_shape = donor.inventory.tensors[module.primary].shape;
    if (auto agree = check_sizes_agree(dir, donor, out.back()); !agree) {
      return agree.take_error();
    }
  }
  // The head comes whole: once any of it is grafted, every other module of DIR's head whose
  // bytes are not DONOR's is taken too. AWQ and SmoothQuant fold their scales into the norms, so
  // a dense head beside the quantized checkpoint's own norms would compute with scaled norms
  // and unscaled linears (issue 23: "graft keeps the wrong norms").
  if (!only && !out.empty()) {
    for (const uint32_t m : dir.head.modules) {
      const Module& module = dir.modules[m];
      const auto found = donor_by_name.find(module.name);
      const bool selected =
          std::any_of(out.begin(), out.end(), [&](const Selected& s) { return s.in_dir == m; });
      if (selected || found == donor_by_name.end()) {
        continue;
      }
      QP_TRY_ASSIGN(const bool same, same_module_bytes(dir, m, donor, found->second));
      if (!same) {
        out.push_back({std::string(module.name), m, found->second, {}});
        QP_TRY_ASSIGN(out.back().logical_shape, logical_shape(dir, m));
      }
    }
  }
  for (const Selected& selected : out) {
    const Module& module = donor.modules[selected.in_donor];
    if (module.format != StorageFormat::dense) {
      return refused(file_of(donor, module),
                     selected.name,
                     "stored " + std::string(checkpoint::to_string(module.format)) +
                         " here too; graft from a checkpoint that stores it dense (the base "
                         "model)");
    }
    const Shape& theirs = donor.inventory.tensors[module.primary].shape;
    if (selected.in_dir && !(theirs == selected.logical_shape)) {
      return refused(file_of(donor, module),
                     selected.name,
                     "stored " + safetensors::format_shape(theirs) + " here, but " +
                         file_of(dir, dir.modules[*selected.in_dir]) + " declares " +
                         safetensors::format_shape(selected.logical_shape));
    }
  }
  std::sort(
      out.begin(), out.end(), [](const Selected& a, const Selected& b) { return a.name < b.name; });
  return out;
}

} // namespace qpatch::graft
