#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential harness: qpatch's verdicts against vLLM's own matching code.

For seeded random (layout, config) pairs of each method it writes a small Qwen3.5 checkpoint,
asks qpatch (`--check --json --engine vllm`) what vLLM does with each module, and runs vLLM's
functions (loaded from a source checkout, see vllm_source.py) on the same files. Per case:
  detection    per checkpoint module, the same category on both sides: ok,
               dense_built_quantized, quantized_built_dense, raises, disk_shards_disagree;
  fix-clean    after `qpatch --engine vllm` wrote its patch, vLLM's code finds no problem
               that qpatch does not still report as not fixable;
  confined     each changed file differs only inside one edited array/object;
  idempotent   a second run writes nothing.
With --prune every patch also removes the skip list's dead and duplicate entries (README
"Skip-list lint"): fix-clean then says the pruned list still loads as qpatch says.
Disagreements are shrunk (entries, keys and storage flips removed while the disagreement
stays) and printed as minimal configs.

  VLLM_SRC=/path/to/vllm tools/vllm_diff/vllm_diff.py --qpatch build/qpatch --cases 2000

Earlier vLLM main commits (2026-02-09 onwards) are judged by their own code: export one with
`git archive <commit> vllm | tar -x -C DIR`, then `VLLM_COMMIT=<commit>
VLLM_GIT_DIR=<vllm .git> vllm_diff.py --vllm-src DIR --qpatch-engine vllm@YYYY-MM-DD`. Cases
a commit cannot judge (Qwen3_5ForCausalLM before it was registered, #50210) are counted
apart as "not judged".
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import GENERATORS, SIDE_CARS, Case, make_case  # noqa: E402
from layout import LAYER_TYPES, tensors_for, write_checkpoint  # noqa: E402
from vllm_model import VllmEngine, VllmUnmodelled  # noqa: E402

# The snapshot this harness was run against: Nero10578/vllm, equal to upstream main of
# 2026-08-17. bitsandbytes left the tree in #43529 (073c510c9); main loads it only through
# vllm-project/vllm-bnb-plugin, whose rules are read from that checkout (v0.0.2, 85de847).
VLLM_COMMIT = "017e9f4448b700e85ee16023287b025693c72b9e"
BNB_COMMIT = "85de847cd6e78e749fb2f93cee7de5174c71e95e"

# qpatch finding kinds -> the detection category they claim for their modules.
KIND_CATEGORY = {
    "dense_quantized_by_config": "dense_built_quantized",
    "engine_quantizes": "dense_built_quantized",
    "quantized_made_dense": "quantized_built_dense",
    "quantized_untargeted": "quantized_built_dense",
    "engine_builds_dense": "quantized_built_dense",
    "fused_shards_disagree": "raises",
    "untargeted_raises": "raises",
    "config_rejected": "raises",
    "disk_shards_disagree": "disk_shards_disagree",
    "inconsistent_storage": "disk_shards_disagree",
}
CASE_LEVEL = {"config_rejected", "unsupported_method"}


def engine_categories(engine, case: Case, config_json: dict, files: dict):
    """checkpoint module -> set of categories, and the case-level rejection (or None).
    `engine` is any engine model with vLLM's judge() shape (VllmEngine, the SGLang and
    transformers models in tools/sglang_diff and tools/transformers_diff): a list of
    (layer with .modules, "quantized" | "dense" | an exception instance meaning the engine
    raises), or [(None, rejection)] when it refuses the config outright. A verdict of
    "not_loaded" (transformers drops the MTP head) counts as no problem."""
    tensors = {n: d for n, d, s, f in tensors_for(case.prefix, case.storage, case.fmt)}
    results = engine.judge(case.arch, case.prefix, LAYER_TYPES, 1, config_json, files, tensors)
    cats = {m: set() for m in case.linears()}
    for layer, verdict in results:
        if layer is None:
            return cats, str(verdict)
        disk = {case.storage.get(m, False) for m in layer.modules}
        if len(disk) > 1:
            cat = "disk_shards_disagree"
        elif isinstance(verdict, BaseException):
            cat = "raises"
        elif verdict == "quantized" and disk == {False}:
            cat = "dense_built_quantized"
        elif verdict == "dense" and disk == {True}:
            cat = "quantized_built_dense"
        else:
            continue
        for m in layer.modules:
            cats.setdefault(m, set()).add(cat)
    return cats, None


def qpatch_categories(case: Case, doc: dict, keep=None):
    """`keep`: the engine model's keeps_finding (the SGLang harness's version filter when qpatch
    judged several versions at once); None keeps every finding."""
    cats = {m: set() for m in case.linears()}
    rejected = None
    ck = doc["checkpoints"][0]
    for f in ck.get("findings", []):
        if keep is not None and not keep(f):
            continue
        cat = KIND_CATEGORY.get(f["kind"])
        if f["kind"] in CASE_LEVEL and not f.get("modules"):
            rejected = f["detail"]
        if cat is None:
            continue
        for m in f.get("modules", []):
            cats.setdefault(m, set()).add(cat)
    return cats, rejected


class Runner:
    def __init__(self, qpatch: str, engine, work: str, fix_engine: str | None = None,
                 qpatch_engine: str = "vllm", prune: bool = False):
        self.qpatch, self.engine, self.work = qpatch, engine, work
        self.fix_args = ["--prune"] if prune else []
        # --engine for qpatch's verdicts (--check) and for the fix: "vllm", or vllm@DATE for
        # the vLLM of that day; the fix may instead be for "all" engines (--fix-engine).
        self.qpatch_engine = qpatch_engine
        self.fix_engine = qpatch_engine if fix_engine in (None, "vllm", qpatch_engine) \
            else fix_engine
        self.name = getattr(engine, "name", "vllm")
        self.counter = 0

    def _dir(self) -> str:
        self.counter += 1
        return os.path.join(self.work, f"c{self.counter}")

    def run(self, args, directory):
        p = subprocess.run([self.qpatch, *args, directory], capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout, p.stderr

    def write(self, case: Case) -> str:
        d = self._dir()
        write_checkpoint(d, tensors_for(case.prefix, case.storage, case.fmt), case.files())
        return d

    def check(self, case: Case) -> dict:
        """Everything known about one case."""
        d = self.write(case)
        out = {"problems": []}
        try:
            # A case the engine model cannot judge is known before qpatch runs: ask first, so
            # the unjudged half of a run (SGLang's Qwen3_5ForCausalLM) costs no qpatch calls.
            files = self._json_files(d)
            engine_categories(self.engine, case, files["config.json"], files)
            self._check(case, d, out)
        except (VllmUnmodelled, getattr(self.engine, "Unmodelled", VllmUnmodelled)) as e:
            out = {"problems": [], "skipped": str(e)}
        finally:
            shutil.rmtree(d, ignore_errors=True)
        return out

    def _json_files(self, d: str) -> dict[str, dict]:
        files = {}
        for name in ("config.json", "quantization_config.json", "quantize_config.json",
                     "hf_quant_config.json"):
            p = os.path.join(d, name)
            if os.path.exists(p):
                files[name] = json.loads(pathlib.Path(p).read_text())
        return files

    def _compare(self, case, d, where, out) -> bool:
        code, stdout, stderr = self.run(["--check", "--json", "--engine", self.qpatch_engine], d)
        try:
            doc = json.loads(stdout) if not (code == 70 or code >= 3) else None
        except ValueError:
            doc = None
        if doc is None:
            out["problems"].append((f"{where}:exit{code}", stderr.strip()[:300]))
            return False
        files = self._json_files(d)
        v_cats, v_rej = engine_categories(self.engine, case, files["config.json"], files)
        q_cats, q_rej = qpatch_categories(case, doc, getattr(self.engine, "keeps_finding", None))
        ok = True
        if (v_rej is None) != (q_rej is None):
            out["problems"].append((f"{where}:rejection",
                                    f"{self.name}: {v_rej!r}; qpatch: {q_rej!r}"))
            return False
        if v_rej is not None:
            return True
        for m in case.linears():
            if v_cats.get(m, set()) != q_cats.get(m, set()):
                out["problems"].append((f"{where}:detect",
                                        f"{m}: {self.name} {sorted(v_cats.get(m, set()))} "
                                        f"qpatch {sorted(q_cats.get(m, set()))}"))
                ok = False
        out.setdefault("docs", {})[where] = doc
        return ok

    def _check(self, case: Case, d: str, out: dict) -> None:
        out["detect"] = self._compare(case, d, "before", out)
        before = {p.name: p.read_bytes() for p in pathlib.Path(d).iterdir() if p.is_file()}
        code, stdout, stderr = self.run(["--engine", self.fix_engine, "--no-backup", "-q",
                                         *self.fix_args], d)
        if code == 70 or code >= 3:
            out["problems"].append((f"fix:exit{code}", stderr.strip()[:300]))
            out["fix_clean"] = out["confined"] = out["idempotent"] = False
            return
        after = {p.name: p.read_bytes() for p in pathlib.Path(d).iterdir() if p.is_file()}
        out["changed"] = sorted(n for n in after if before.get(n) != after[n])
        out["confined"] = all(_confined(before.get(n, b"{}"), after[n], n, out)
                              for n in out["changed"])
        # fix-then-clean: on the patched files qpatch and vLLM agree again, and whatever vLLM
        # still finds, qpatch reports as not fixable (exit 1 after writing).
        agree_after = self._compare(case, d, "after", out)
        files = self._json_files(d)
        v_cats, v_rej = engine_categories(self.engine, case, files["config.json"], files)
        remaining = v_rej is not None or any(v_cats.values())
        keep = getattr(self.engine, "keeps_finding", None) or (lambda f: True)
        fixable_left = any(f.get("fixable") and keep(f) for f in
                           out.get("docs", {}).get("after", {"checkpoints": [{}]})
                           ["checkpoints"][0].get("findings", []))
        out["fix_clean"] = agree_after and not fixable_left and (not remaining or code == 1)
        if not out["fix_clean"] and agree_after:
            out["problems"].append(("fix:not-clean",
                                    f"exit {code}; {self.name} still: "
                                    f"{ {m: sorted(c) for m, c in v_cats.items() if c} }"))
        code2, _, stderr2 = self.run(["--engine", self.fix_engine, "--no-backup", "-q",
                                      *self.fix_args], d)
        again = {p.name: p.read_bytes() for p in pathlib.Path(d).iterdir() if p.is_file()}
        out["idempotent"] = again == after and code2 == code
        if not out["idempotent"]:
            out["problems"].append(("fix:not-idempotent", f"exit {code} then {code2}"))


# The arrays and objects a patch may edit: each method's skip list or rule object. Anything
# else in a file that changes is a violation.
EDITABLE = {"ignore", "dynamic", "modules_in_block_to_quantize", "extra_config",
            "modules_to_not_convert", "ignored_layers", "exclude_modules",
            "llm_int8_skip_modules", "quantized_layers", "exclude"}


def _confined(old: bytes, new: bytes, name: str, out: dict) -> bool:
    """Every change lies inside an edited skip list or rule object (or the index's
    weight_map), and the bytes outside them are untouched."""
    if not name.endswith(".json"):
        return True
    try:
        a, b = json.loads(old), json.loads(new)
    except ValueError:
        out["problems"].append(("confined", f"{name} does not parse after the fix"))
        return False
    if name == "model.safetensors.index.json":
        spots = _diff_spots(a, b, ())
        ok = all(s[:1] == ("weight_map",) or s[:2] == ("metadata", "total_size") for s in spots)
    else:
        spots = _diff_spots(a, b, ())
        # A key the patch creates shows as its parent object gaining a key: allowed when
        # the only new or removed keys are editable ones.
        ok = all(_editable_spot(a, b, s) for s in spots)
        out["containers"] = max(out.get("containers", 0), len(spots))
    if not ok:
        out["problems"].append(("confined", f"{name}: changed at {sorted(spots)}"))
    return ok


def _editable_spot(a, b, spot) -> bool:
    if any(k in EDITABLE for k in spot):
        return True  # inside an edited list or rule object (a rewritten extra_config value)
    old, new = _get_or(a, spot), _get_or(b, spot)
    if isinstance(old, dict) and isinstance(new, dict):
        changed = set(old) ^ set(new)
        same = all(old[k] == new[k] for k in set(old) & set(new) if k not in EDITABLE)
        return bool(changed) and changed <= EDITABLE and same
    return False


def _get_or(value, path):
    for k in path:
        if not isinstance(value, dict) or k not in value:
            return None
        value = value[k]
    return value


def _diff_spots(a, b, path):
    """The innermost containers that differ: a list that changed, or an object that gained or
    lost keys (changed values below are followed)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return {path}
        spots = set()
        for k in a:
            if a[k] != b[k]:
                spots |= _diff_spots(a[k], b[k], path + (k,))
        return spots
    if a != b:
        container = isinstance(a, (list, dict)) or isinstance(b, (list, dict))
        return {path if container else path[:-1]}
    return set()


# -- shrinking -----------------------------------------------------------------------------
# Shards of one fused layer disagree together: one class for them.
_FUSED = {"in_proj_qkv": "in_proj_qkvz", "in_proj_z": "in_proj_qkvz", "in_proj_b": "in_proj_ba",
          "in_proj_a": "in_proj_ba", "q_proj": "qkv_proj", "k_proj": "qkv_proj",
          "v_proj": "qkv_proj", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}


def _component(module: str) -> str:
    """The part of the model a module belongs to, as disagreements come: the vision tower,
    the MTP decoder layer, or one (fused) layer of the text model (prefix and index gone)."""
    if module.startswith("model.visual."):
        return "vision tower"
    if module.startswith("mtp.layers."):
        return "mtp.layers.N"
    if module in ("mtp.fc", "lm_head"):
        return module
    m = re.sub(r"^model\.(language_model\.)?", "", module)
    m = re.sub(r"\.\d+\.", ".N.", m)
    head, _, last = m.rpartition(".")
    return f"{head}.{_FUSED.get(last, last)}"


def _signature(result: dict) -> frozenset:
    """The disagreement classes a case shows. A class is one component (_component) that both
    sides judge differently in the same way, with where it shows (before the fix, after it,
    or both), or one other kind of problem (rejection, exit, fix:not-clean, confined,
    idempotent). The kinds alone lumped unrelated disagreements together once earlier vLLM
    commits were judged; a case can be in several classes."""
    where_of: dict[str, set] = {}
    for kind, text in result["problems"]:
        where, _, what = kind.partition(":")
        if what == "detect":
            module, _, verdicts = text.partition(": ")
            key = f"detect {_component(module)}: {verdicts}"
        elif what == "rejection":
            v, _, q = text.partition("; ")
            engine_name = v.partition(": ")[0]
            key = (f"rejection: {engine_name} "
                   f"{'accepts' if v.endswith(': None') else 'refuses'}, "
                   f"qpatch {'accepts' if q == 'qpatch: None' else 'refuses'}")
        else:
            key, where = kind, ""
        where_of.setdefault(key, set()).add(where)
    return frozenset(f"{k} ({'+'.join(sorted(w))})" if any(w) else k
                     for k, w in where_of.items())


def shrink(runner: Runner, case: Case, result: dict, budget: int = 150,
           target: frozenset | None = None) -> Case:
    """Greedy: drop list entries and object keys of the quantization config, and put the
    storage back to the default, while the target classes (default: all of the case's)
    remain."""
    target = _signature(result) if target is None else target
    best = case
    default = case.default_storage()
    progress = True
    while progress and budget > 0:
        progress = False
        for cand in _candidates(best, default):
            budget -= 1
            if budget <= 0:
                break
            r = runner.check(cand)
            if r["problems"] and target <= _signature(r):
                best, progress = cand, True
                break
    return best


def _candidates(case: Case, default: dict):
    for m in case.storage:
        if case.storage[m] != default[m]:
            c = case.copy()
            c.storage[m] = default[m]
            yield c
    for path, value in _walk(case.quant, ()):
        if isinstance(value, list):
            for i in range(len(value)):
                c = case.copy()
                _get(c.quant, path).pop(i)
                _sync(c)
                yield c
        if isinstance(value, dict) and path[-1:] in (("dynamic",), ("extra_config",),
                                                     ("config_groups",), ("quantized_layers",)):
            for k in list(value):
                c = case.copy()
                del _get(c.quant, path)[k]
                _sync(c)
                yield c
    if case.sidecar is not None and case.method not in ("modelopt", "modelopt-mixed"):
        c = case.copy()
        c.sidecar = None
        yield c


def _sync(case: Case) -> None:
    if case.method in ("modelopt", "modelopt-mixed"):
        from cases import modelopt_sidecar
        case.sidecar = modelopt_sidecar(case.quant)
    elif case.sidecar is not None:
        case.sidecar = json.loads(json.dumps(case.quant))


def _walk(value, path):
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, path + (k,))


def _get(value, path):
    for k in path:
        value = value[k]
    return value


def describe(case: Case, result: dict, target: frozenset = frozenset()) -> str:
    """The case and its first problems, those of the `target` class first (a shrunk case
    can keep other disagreements; the six lines shown should include the one it shows)."""
    default = case.default_storage()
    flips = {m: ("quantized" if q else "dense") for m, q in case.storage.items()
             if q != default[m]}
    lines = [f"  arch {case.arch}, text prefix {case.prefix!r}; storage: main linears "
             f"quantized, vision tower, MTP head and lm_head dense, except {flips or 'nothing'}",
             f"  quantization_config: {json.dumps(case.quant)}"]
    if case.sidecar is not None:
        lines.append(f"  {SIDE_CARS[case.method]}: {json.dumps(case.sidecar)}")
    def bare(sig):  # the class without where it shows
        return {re.sub(r" \((after|before|after\+before)\)$", "", k) for k in sig}
    mine = [p for p in result["problems"] if bare(_signature({"problems": [p]})) <= bare(target)]
    others = [p for p in result["problems"] if p not in mine]
    for kind, text in (mine + others)[:6]:
        lines.append(f"  {kind}: {text}")
    return "\n".join(lines)


def _commit_of(root: str) -> str:
    """The checkout's commit and its date: `git rev-parse HEAD`, or $VLLM_COMMIT for an
    exported tree (dated when $VLLM_GIT_DIR, or the current directory, is a repository that
    has it)."""
    p = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True)
    if p.returncode == 0:
        commit, git = p.stdout.strip(), ["git", "-C", root]
    elif os.environ.get("VLLM_COMMIT"):
        commit = os.environ["VLLM_COMMIT"]
        git = ["git", f"--git-dir={os.environ['VLLM_GIT_DIR']}"] \
            if os.environ.get("VLLM_GIT_DIR") else ["git"]
    else:
        return "unknown commit (not a git checkout; set VLLM_COMMIT)"
    d = subprocess.run([*git, "log", "-1", "--format=%cs", commit], capture_output=True,
                       text=True)
    date = f" ({d.stdout.strip()})" if d.returncode == 0 and d.stdout.strip() else ""
    return commit[:12] + date


def run_methods(runner: Runner, methods: list[str], first_seed: int, cases: int,
                shrink_per_class: int) -> bool:
    """Judge `cases` seeds of each method, print the figures and the shrunk disagreements
    per class; True when any case disagreed."""
    failed = False
    for method in methods:
        counts = collections.Counter()
        classes = collections.defaultdict(list)
        skipped = collections.Counter()
        for seed in range(first_seed, first_seed + cases):
            case = make_case(method, seed)
            r = runner.check(case)
            if "skipped" in r:
                skipped[r["skipped"]] += 1
                continue
            counts["cases"] += 1
            for key in ("detect", "fix_clean", "confined", "idempotent"):
                counts[key] += bool(r.get(key))
            for sig in _signature(r):
                classes[frozenset([sig])].append((seed, case, r))
        n = counts["cases"]
        for reason, k in skipped.items():
            print(f"\n{method}: {k} case(s) not judged: {reason}")
        if n == 0:
            continue
        print(f"\n{method}: {n} cases; detection {counts['detect']}/{n} "
              f"({100 * counts['detect'] / n:.1f}%), fix-then-clean {counts['fix_clean']}/{n}, "
              f"confined {counts['confined']}/{n}, idempotent {counts['idempotent']}/{n}")
        for sig, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
            failed = True
            print(f" {len(items)} case(s) with {', '.join(sorted(sig))}")
            for seed, case, r in items[: shrink_per_class]:
                small = shrink(runner, case, r, target=sig)
                print(f" seed {seed}, shrunk:\n{describe(small, runner.check(small), sig)}")
    return failed


def case_arguments(ap: argparse.ArgumentParser) -> None:
    """The arguments every engine's driver shares: the binary and which cases to judge."""
    ap.add_argument("--qpatch", default="build/qpatch")
    ap.add_argument("--method", action="append", choices=sorted(GENERATORS))
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0, help="first case seed")
    ap.add_argument("--shrink", type=int, default=3, help="disagreements shrunk per class")
    ap.add_argument("--prune", action="store_true",
                    help="patch with --prune (dead and duplicate skip-list entries removed)")


def run_harness(engine, args, methods: list[str], qpatch_engine: str,
                fix_engine: str | None) -> int:
    """Judge the cases of `methods` (case_arguments' values in `args`) with `engine` against
    qpatch --engine `qpatch_engine`; the exit status: 0 all agree, 1 some disagree, 2 qpatch
    does not know the engine name."""
    with tempfile.TemporaryDirectory(prefix="engine-diff-") as work:
        runner = Runner(os.path.abspath(args.qpatch), engine, work, fix_engine, qpatch_engine,
                        getattr(args, "prune", False))
        # A qpatch that does not know the engine name (vllm@DATE before it was added) would
        # fail every case alike: say so once.
        probe = runner.write(make_case(methods[0], args.seed))
        code, stdout, stderr = runner.run(["--check", "--json", "--engine", qpatch_engine],
                                          probe)
        shutil.rmtree(probe, ignore_errors=True)
        if code == 2 and not stdout.strip():
            print(f"qpatch refuses --engine {qpatch_engine}: {stderr.strip()[:300]}",
                  file=sys.stderr)
            return 2
        failed = run_methods(runner, methods, args.seed, args.cases, args.shrink)
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vllm-src", default=os.environ.get("VLLM_SRC"),
                    help="vLLM source checkout (default $VLLM_SRC)")
    ap.add_argument("--bnb-src", default=os.environ.get("VLLM_BNB_SRC"),
                    help=f"vllm-bnb-plugin checkout ({BNB_COMMIT[:12]}) for bitsandbytes "
                         "(default $VLLM_BNB_SRC); without it bitsandbytes is skipped")
    case_arguments(ap)
    ap.add_argument("--fix-engine", default="vllm",
                    help="--engine for the patch whose result vLLM judges (all: the one patch "
                         "that must satisfy every engine; vllm: the --qpatch-engine value)")
    ap.add_argument("--qpatch-engine", default=None,
                    help="--engine qpatch judges and fixes for: vllm (every version qpatch "
                         "models), or vllm@YYYY-MM-DD for the vLLM main of that day; default: "
                         "vllm@ the --vllm-src commit's date, so the one version executed is "
                         "the one judged")
    args = ap.parse_args()
    if not args.vllm_src:
        ap.error("give --vllm-src or set VLLM_SRC")
    engine = VllmEngine(args.vllm_src, args.bnb_src)
    methods = args.method or [m for m in GENERATORS if m != "bitsandbytes" or args.bnb_src]
    commit = _commit_of(args.vllm_src)
    if args.qpatch_engine is None:
        # Judging every modelled version against one executed commit counts an older
        # version's verdict (one the executed commit no longer has) as a disagreement.
        date = re.search(r"\((\d{4}-\d{2}-\d{2})\)", commit)
        args.qpatch_engine = f"vllm@{date.group(1)}" if date else "vllm"
    print(f"vLLM source {args.vllm_src} at {commit} (harness written against "
          f"{VLLM_COMMIT[:12]}{'' if commit.startswith(VLLM_COMMIT[:12]) else ': rules may differ'})"
          f"; qpatch {args.qpatch} --engine {args.qpatch_engine}"
          f"; seeds {args.seed}..{args.seed + args.cases - 1}")
    return run_harness(engine, args, methods, args.qpatch_engine, args.fix_engine)


if __name__ == "__main__":
    sys.exit(main())
