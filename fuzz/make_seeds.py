#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Writes the seed corpora under fuzz/corpus/<target>/ from testdata/ and from headers laid out
# as the test builders (tools/synth/synthetic_checkpoint.cpp header_prefix) write them.
# Run from the repository root: python3 fuzz/make_seeds.py. libFuzzer adds what it finds to its
# own working corpus; only these seeds (and minimized additions) are committed.
import json
import os
import pathlib
import struct

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"
BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "I16": 16,
        "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "F64": 64,
        "F4": 4}


def write(target, name, data):
    directory = corpus / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def shard(tensors, metadata='{"format":"pt"}', raw=None):
    """Shard bytes as header_prefix writes them, with zero-filled data."""
    if raw is not None:
        text, data_size = raw
    else:
        text = "{" + ('"__metadata__":' + metadata if metadata is not None else "")
        cursor = 0
        for i, (name, dtype, shape) in enumerate(tensors):
            elements = 1
            for dim in shape:
                elements *= dim
            size = elements * BITS[dtype] // 8
            sep = "," if (i or metadata is not None) else ""
            text += (f'{sep}"{name}":{{"dtype":"{dtype}","shape":[{",".join(map(str, shape))}],'
                     f'"data_offsets":[{cursor},{cursor + size}]}}')
            cursor += size
        text += "}"
        text += " " * ((8 - len(text.encode()) % 8) % 8)
        data_size = cursor
    body = text.encode()
    return struct.pack("<Q", len(body)) + body + bytes(data_size)


# Headers: the shapes of real layers, scaled down so the data stays small.
layer = "model.layers.0"
write("header", "w4a16_packed", shard([
    (f"{layer}.self_attn.q_proj.weight_packed", "I32", [8, 2]),
    (f"{layer}.self_attn.q_proj.weight_scale", "BF16", [8, 1]),
    (f"{layer}.self_attn.q_proj.weight_shape", "I64", [2]),
    (f"{layer}.input_layernorm.weight", "BF16", [16]),
    ("lm_head.weight", "BF16", [4, 16])]))
write("header", "mtp_fc", shard([
    ("mtp.fc.weight", "BF16", [4, 8]), ("mtp.fc.weight_scale", "F32", [4, 1]),
    ("mtp.norm.weight", "BF16", [4])]))
write("header", "fp8_block", shard([
    (f"{layer}.mlp.experts.0.gate_proj.weight", "F8_E4M3", [16, 8]),
    (f"{layer}.mlp.experts.0.gate_proj.weight_scale_inv", "F32", [1, 1])], metadata=None))
write("header", "nvfp4", shard([
    (f"{layer}.mlp.down_proj.weight", "U8", [4, 4]),
    (f"{layer}.mlp.down_proj.weight_scale", "F8_E4M3", [4, 1]),
    (f"{layer}.mlp.down_proj.weight_scale_2", "F32", []),
    (f"{layer}.mlp.down_proj.input_scale", "F32", [])]))
write("header", "mxfp4_blocks", shard([
    ("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", [2, 4, 1, 16]),
    ("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", [2, 4, 1]),
    ("model.layers.0.mlp.experts.gate_up_proj_bias", "BF16", [2, 4])]))
write("header", "f4_and_empty", shard([
    ("a", "F4", [2, 4]), ("empty", "BF16", [0, 7]), ("scalar", "F64", []), ("flag", "BOOL", [3])]))
write("header", "metadata_null", shard([("a", "U8", [2])], metadata="null"))
write("header", "metadata_many", shard([("a", "U8", [2])],
                                       metadata='{"format":"pt","total_size":"2","k\\u00e9y":"v"}'))
write("header", "escaped_names", shard([
    ("caf\\u00e9.weight", "U8", [1]), ("model.layers.\\u0031.w", "U8", [1]),
    ("q\\\"uote", "U8", [1]), ("\u00e9t\u00e9.\U0001F600", "U8", [1])]))
write("header", "spaced", shard(None, raw=(
    '{ "a" : { "shape" : [ 2 ] , "data_offsets" : [ 0 , 2 ] , "dtype" : "U8" } ,\r\n\t'
    '"b":{"dtype":"I16","shape":[1,1],"data_offsets":[2,4]} }   ', 4)))
write("header", "out_of_order", shard(None, raw=(
    '{"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},'
    '"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}', 4)))
# Refusals worth starting from: the checks in reader.hpp, in order.
write("header", "bad_too_small", b"\x10\x00\x00")
write("header", "bad_length", struct.pack("<Q", 1000) + b"{}")
write("header", "bad_utf8", shard(None, raw=('{"\udcff":{"dtype":"U8","shape":[1],'
                                             '"data_offsets":[0,1]}}'.encode(
                                                 "utf-8", "surrogateescape").decode(
                                                 "latin-1"), 1)))
write("header", "bad_duplicate", shard(None, raw=(
    '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
    '"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}', 4)))
write("header", "bad_negative_zero", shard(None, raw=(
    '{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}}', 0)))
write("header", "bad_overflow", shard(None, raw=(
    '{"a":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,0]}}', 0)))
write("header", "bad_incomplete", shard(None, raw=(
    '{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}', 5)))

# Indexes: the real one, and small ones with the shapes parse_index checks.
write("index", "mimo_7b", (root / "testdata/real-configs/mimo-7b-bf16.model.safetensors.index.json")
      .read_bytes())
write("index", "two_shards", json.dumps({"metadata": {"total_size": 10}, "weight_map": {
    "a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors",
    "c.weight": "model-00002-of-00002.safetensors"}}, indent=2))
write("index", "compact", '{"weight_map":{"a":"x.safetensors","b":"x.safetensors"},"metadata":null}')
write("index", "escaped", '{"weight_map": {"a\\u0041": "x\\u002esafetensors", "caf\u00e9": '
      '"y.safetensors"}, "metadata": {"k": {"n": 1}}}')
write("index", "bad_path", '{"weight_map": {"a": "../x.safetensors", "b": "/abs.safetensors"}}')
write("index", "bad_shape", '{"weight_map": [], "metadata": {"total_size": 1.5}}')
write("index", "bad_duplicate", '{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}')

# Configs: every real config and fragment (fragments wrapped as config.json holds them).
for path in sorted((root / "testdata/real-configs").glob("*.config.json")):
    write("config", path.name.removesuffix(".config.json"), path.read_bytes())
write("config", "sample_qwen35", (root / "testdata/sample/qwen3.5-27b-w4a16-mtp.config.json")
      .read_bytes())
for path in sorted((root / "testdata/real-configs/fragments").glob("*.json")) + [
        root / "testdata/real-configs/compressed-tensors-example-w4-pack-quantized"
        ".quantization_config.json"]:
    fragment = json.loads(path.read_text())
    name = path.name.split(".quantization_config")[0].split(".hf_quant_config")[0]
    write("config", "fragment_" + name,
          json.dumps({"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 2,
                      "quantization_config": fragment}, indent=2) + "\n")
write("config", "text_config", json.dumps({"text_config": {"num_hidden_layers": 4,
    "quantization_config": {"quant_method": "gptq", "dynamic": {"-:.*mtp.*": {},
    "+:.*\\.0\\..*": {"bits": 8}}, "modules_in_block_to_quantize": [["q_proj", "k_proj"],
    ["o_proj"]], "lm_head": 1}}}))
write("config", "inc_extra", json.dumps({"quantization_config": {"quant_method": "auto-round",
    "bits": 4, "group_size": 128, "sym": True, "block_name_to_quantize": "model.layers,mtp",
    "extra_config": {"mtp.fc": {"bits": 16}, ".*shared_expert.*": {"bits": 8, "sym": False}}}}))
write("config", "bad_not_object", '{"quantization_config": [1, 2]}')
write("config", "bad_duplicate", '{"quantization_config": {"a": 1, "a": 2}}')

# Editor: a control line (target container, op, remove mask, additions; then new strings split
# at ',') and the config text.
sample = (root / "testdata/real-configs/qwen3.6-27b-w4a16-awq-ct-packed-mtp.config.json").read_text()
small = ('{\n  "quantization_config": {\n    "ignore": [\n      "lm_head",\n      "re:^mtp.*"\n'
         '    ],\n    "x": 1\n  }\n}\n')
write("editor", "append_ignore", "\x02\x00\x00\x01mtp.fc\n" + small)
write("editor", "remove_and_append", "\x02\x00\x01\x02mtp.fc,caf\u00e9\n" + small)
write("editor", "object_prepend", "\x01\x03\x02\x01new_key\n" + small)
write("editor", "object_append_members", "\x01\x01\x00\x02k1,k2\n" + small)
write("editor", "object_append_raw", "\x00\x02\x00\x01bits\n" + small)
write("editor", "crlf", "\x02\x00\x00\x01a\n" + small.replace("\n", "\r\n"))
write("editor", "inline", "\x02\x00\x00\x03\n" + '{"quantization_config":{"ignore":["a", "b"]}}')
write("editor", "empty_array", "\x02\x00\x00\x01x\n" + '{\n\t"quantization_config": {\n\t\t"ignore": []\n\t}\n}\n')
write("editor", "real_config", "\x05\x00\x03\x01model.layers.0.mlp.gate\n" + sample)
write("editor", "not_json", "\x01\x00\x00\x01x\n" + '{"quantization_config": [1, ')

# Patterns: a mode byte, the pattern, then names (real entries and module names).
names = "\n".join([
    "model.layers.0.linear_attn.in_proj_a", "model.layers.0.linear_attn.in_proj_qkvz",
    "mtp.layers.0.self_attn.o_proj", "mtp.fc", "model.visual.blocks.0.attn.qkv", "lm_head",
    "model.language_model.layers.12.mlp.experts.7.down_proj", "caf\u00e9.\u00e9t\u00e9"])
for i, pattern in enumerate([
        ".*linear_attn\\.in_proj_(a|b)$", ".*mtp\\..*proj$", "^visual\\.", "lm_head",
        "model.layers.0", ".*\\.mlp\\.experts\\.\\d+\\.(gate|up|down)_proj\\Z", "(?i)LM_HEAD",
        "^([\\w.]+)+[^\\w.]$", "mtp\\.(?!fc)", "[\u00e9]t\u00e9", "a{2,}b|(c)\\1"]):
    write("pattern", f"pattern_{i:02d}", bytes([i % 3]) + (pattern + "\n" + names).encode())
