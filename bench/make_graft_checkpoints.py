#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Two checkpoints for bench/graft_bench.sh, with real (random) bytes, not holes: DIR, whose one
# shard holds the main model's tensors and a packed int4 MTP head (so the shard must be
# rewritten), and DONOR, whose head shard holds the same head in BF16. Sizes in MB from argv.
import json, os, sys

def write_shard(path, tensors):
    # tensors: [(name, dtype, shape, size in bytes[, the bytes])]; random bytes by default
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape, size, *_ in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as out:
        out.write(len(text).to_bytes(8, "little") + text.encode())
        chunk = os.urandom(1 << 24)
        for _, _, _, size, *data in tensors:
            if data:
                out.write(data[0])
                continue
            left = size
            while left > 0:
                n = min(left, len(chunk))
                out.write(chunk[:n])
                left -= n
    return {t[0]: os.path.basename(path) for t in tensors}, offset

def layer_linears(prefix, hidden, inter):
    # A Qwen3.5-27B-like decoder layer's attention and MLP projections: (rows, cols) each.
    return {f"{prefix}.self_attn.q_proj": (2 * hidden, hidden),
            f"{prefix}.self_attn.k_proj": (hidden // 4, hidden),
            f"{prefix}.self_attn.v_proj": (hidden // 4, hidden),
            f"{prefix}.self_attn.o_proj": (hidden, hidden),
            f"{prefix}.mlp.gate_proj": (inter, hidden),
            f"{prefix}.mlp.up_proj": (inter, hidden),
            f"{prefix}.mlp.down_proj": (hidden, inter)}

def packed(linears, quantized):
    # Each linear as compressed-tensors pack-quantized int4 (group 32) or as a BF16 weight.
    out = []
    for module, (rows, cols) in linears.items():
        if quantized:
            out.append((module + ".weight_packed", "I32", [rows, cols // 8], rows * cols // 2))
            out.append((module + ".weight_scale", "BF16", [rows, cols // 32], rows * cols // 16))
            out.append((module + ".weight_shape", "I64", [2], 16,
                        rows.to_bytes(8, "little") + cols.to_bytes(8, "little")))
        else:
            out.append((module + ".weight", "BF16", [rows, cols], rows * cols * 2))
    return out

def head(hidden, inter, quantized):
    # A Qwen3.5-27B-like MTP layer: fc [h, 2h] and one decoder layer.
    linears = {"mtp.fc": (hidden, 2 * hidden), **layer_linears("mtp.layers.0", hidden, inter)}
    return packed(linears, quantized) + [("mtp.norm.weight", "BF16", [hidden], hidden * 2)]

def main_layers(kept_mb, hidden, inter):
    # Whole W4A16 decoder layers (what a real shard holds: ~24 tensors a layer, consistent with
    # the config) until KEPT_MB is reached.
    out, size, i = [], 0, 0
    while size < kept_mb << 20:
        layer = packed(layer_linears(f"model.layers.{i}", hidden, inter), True)
        layer.append((f"model.layers.{i}.input_layernorm.weight", "BF16", [hidden], hidden * 2))
        out += layer
        size += sum(t[3] for t in layer)
        i += 1
    return out

def config(quantized):
    doc = {"architectures": ["Qwen3_5ForCausalLM"], "model_type": "qwen3_5_text",
           "hidden_size": 5120, "mtp_num_hidden_layers": 1, "tie_word_embeddings": False}
    if quantized:
        doc["quantization_config"] = {
            "quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": {"format": "pack-quantized", "targets": ["Linear"],
                "weights": {"num_bits": 4, "group_size": 32, "strategy": "group",
                            "symmetric": True, "type": "int"}}}}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"

def write(dir_, tensors_by_shard, quantized):
    os.makedirs(dir_, exist_ok=True)
    weight_map, total = {}, 0
    for name, tensors in tensors_by_shard.items():
        names, size = write_shard(os.path.join(dir_, name), tensors)
        weight_map.update(names)
        total += size
    with open(os.path.join(dir_, "config.json"), "w") as out:
        out.write(config(quantized))
    with open(os.path.join(dir_, "model.safetensors.index.json"), "w") as out:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, out, indent=2,
                  sort_keys=True)
        out.write("\n")

def main():
    work, kept_mb = sys.argv[1], int(sys.argv[2])
    hidden, inter = 5120, 17408  # the 27B's sizes: the BF16 head is ~850 MB
    main_tensors = main_layers(kept_mb, hidden, inter)
    write(os.path.join(work, "dir"),
          {"model-00001-of-00001.safetensors": main_tensors + head(hidden, inter, True)}, True)
    write(os.path.join(work, "donor"),
          {"model-00001-of-00002.safetensors": main_tensors[:1],
           "model-00002-of-00002.safetensors": head(hidden, inter, False)}, False)

main()
