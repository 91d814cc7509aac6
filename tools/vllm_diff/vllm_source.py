# SPDX-License-Identifier: Apache-2.0
"""Load vLLM's own matching code from a source checkout and run it without torch.

Nothing of vLLM is copied into this repository: each function and class is read from the
checkout given on the command line (or $VLLM_SRC) when the harness starts, compiled from its
source text, and executed in a namespace where the torch-only names it refers to are stand-ins.
What a stand-in may do is narrow: layer classes exist only for isinstance() and class names;
any other name the code uses (kernels, schemes, quant methods, loggers) becomes a Marker, an
inert object that records its name, so "returned a quant method" can be told from "returned
UnquantizedLinearMethod" or None.
"""
from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import functools
import importlib
import pathlib
import sys
import types
import typing

# Modules the vLLM code may import for real: the standard library and `regex`, which vLLM
# uses for `re` (it is what gives Python-compatible semantics). Everything else is faked.
_REAL_MODULES = {
    "abc", "ast", "collections", "collections.abc", "contextlib", "copy", "dataclasses",
    "enum", "fnmatch", "fractions", "functools", "itertools", "json", "math", "os",
    "pathlib", "re", "regex", "types", "typing", "typing_extensions", "warnings",
}


class Marker:
    """An inert stand-in: calling it, indexing it or reading an attribute gives another."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"<{self._name}>"

    def __call__(self, *args, **kwargs):
        return Marker(self._name + "()")

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Marker(f"{self._name}.{attr}")

    def __getitem__(self, key):
        return Marker(f"{self._name}[]")

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases):
        return (object,)

    def __bool__(self) -> bool:
        return True

    def __iter__(self):
        return iter(())


class FakeModule(types.ModuleType):
    """A module whose every attribute is a Marker, unless overridden."""

    def __init__(self, name: str, overrides: dict):
        super().__init__(name)
        self.__path__ = []  # so submodules can be imported from it
        self._overrides = overrides

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr in self._overrides:
            return self._overrides[attr]
        return Marker(f"{self.__name__}.{attr}")


# Top-level packages whose imports inside executed code get a FakeModule. The SGLang and
# transformers harnesses add their own roots (sglang, optimum, accelerate, ...) to this set.
FAKE_ROOTS = {"vllm_src", "vllm", "torch", "compressed_tensors", "transformers", "triton"}


class _FakeFinder:
    """Imports that run inside vLLM's functions (`from .schemes.factory import ...`, lazy
    `from vllm.... import ...`) get a FakeModule: only what is called matters, and a Marker
    returned where a quant method is expected means "quantized"."""

    stand_ins: dict = {}

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery
        if fullname.split(".")[0] in FAKE_ROOTS:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        return FakeModule(spec.name, self.stand_ins)

    def exec_module(self, module):
        pass


_FINDER = _FakeFinder()
sys.meta_path.append(_FINDER)


class Namespace(dict):
    """Globals for vLLM code: a missing name is a Marker (CPython honours __missing__ for a
    dict subclass used as globals), so code paths we never reach need no stand-in."""

    def __missing__(self, key):
        if hasattr(builtins, key):
            raise KeyError(key)
        return Marker(key)


def _is_real(module: str) -> bool:
    return module in _REAL_MODULES or module.split(".")[0] in {"collections", "typing"}


class VllmSource:
    """A vLLM source checkout, read file by file."""

    def __init__(self, root: str | pathlib.Path, stand_ins: dict,
                 package: str = "vllm/model_executor"):
        self.root = pathlib.Path(root)
        if not (self.root / package).is_dir():
            raise SystemExit(f"{self.root}: not the checkout expected (no {package}/)")
        # Names the matching code needs with real behaviour (layer classes for isinstance,
        # torch dtypes for GPTQ's header scan). Every module lookup consults these first.
        self.stand_ins = stand_ins
        _FakeFinder.stand_ins = stand_ins
        self.package = package
        self._trees: dict[str, ast.Module] = {}
        self._texts: dict[str, str] = {}

    # -- reading -------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def first(self, *rels: str) -> str | None:
        """The first of `rels` this checkout has (files move between vLLM versions)."""
        return next((r for r in rels if self.exists(r)), None)

    def has(self, rel: str, name: str) -> bool:
        """Whether `rel` exists and defines the top-level `name`."""
        if not self.exists(rel):
            return False
        return any(getattr(n, "name", None) == name or (
            isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                              for t in n.targets))
            for n in self.tree(rel).body)

    def text(self, rel: str) -> str:
        if rel not in self._texts:
            self._texts[rel] = (self.root / rel).read_text(encoding="utf-8")
        return self._texts[rel]

    def tree(self, rel: str) -> ast.Module:
        if rel not in self._trees:
            self._trees[rel] = ast.parse(self.text(rel), filename=rel)
        return self._trees[rel]

    def node(self, rel: str, name: str) -> ast.AST:
        for node in self.tree(rel).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
                return node
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                return node
        raise SystemExit(f"{rel}: no top-level {name!r} (has vLLM changed?)")

    def class_node(self, rel: str, name: str) -> ast.ClassDef:
        node = self.node(rel, name)
        assert isinstance(node, ast.ClassDef)
        return node

    # -- executing -----------------------------------------------------------------------
    def namespace(self, rel: str) -> Namespace:
        """Globals for code from `rel`: its imports resolved (real or fake), then stand-ins."""
        # dataclasses look the defining module up in sys.modules: give them an empty one.
        name = "vllm_src." + rel.replace("/", ".").removesuffix(".py")
        sys.modules.setdefault(name, types.ModuleType(name))
        ns = Namespace(__name__=name, __package__=name.rsplit(".", 1)[0],
                       __builtins__=builtins)
        for node in self.tree(rel).body:
            self._bind_import(node, ns)
        ns.update(self.stand_ins)
        for node in self.tree(rel).body:
            # Module constants written as literals (fp8.py ACTIVATION_SCHEMES, modelopt.py
            # QUANT_ALGOS) are bound as they are.
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                    node.targets[0], ast.Name):
                try:
                    ns[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
            # ... and annotated (SGLang's `_FALLBACK_FUSED_SHARDS: Mapping[...] = {...}`).
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and node.value is not None):
                try:
                    ns[node.target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
            # `if TYPE_CHECKING: <imports> else: X = object` (gptq_utils.py): the else branch
            # is what runs.
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                    and node.test.id == "TYPE_CHECKING" and node.orelse):
                exec(compile(ast.Module(body=node.orelse, type_ignores=[]), rel, "exec"), ns)
        return ns

    def _bind_import(self, node: ast.AST, ns: Namespace) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.asname or alias.name.split(".")[0]
                if _is_real(alias.name):
                    module = importlib.import_module(alias.name)
                    ns[target] = module if alias.asname else importlib.import_module(
                        alias.name.split(".")[0])
                else:
                    ns[target] = FakeModule(alias.name, self.stand_ins)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            real = _is_real(node.module)
            module = importlib.import_module(node.module) if real else None
            for alias in node.names:
                target = alias.asname or alias.name
                if alias.name in self.stand_ins:
                    ns[target] = self.stand_ins[alias.name]
                elif real:
                    ns[target] = getattr(module, alias.name)
                else:
                    ns[target] = Marker(f"{node.module}.{alias.name}")

    def load(self, rel: str, *names: str, ns: Namespace | None = None,
             optional: bool = False) -> Namespace:
        """Execute the top-level definitions `names` of `rel` (in file order) and return the
        namespace holding them. With `optional`, names this version lacks are skipped
        (helpers come and go: gptq_utils.flatten_list arrived with #44120)."""
        ns = ns if ns is not None else self.namespace(rel)
        wanted = set(names)
        body = [n for n in self.tree(rel).body
                if getattr(n, "name", None) in wanted
                or (isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id in wanted for t in n.targets))]
        found = {getattr(n, "name", None) or n.targets[0].id for n in body}
        missing = wanted - found
        if missing and not optional:
            raise SystemExit(f"{rel}: no top-level {sorted(missing)} (has vLLM changed?)")
        module = ast.Module(body=body, type_ignores=[])
        exec(compile(module, str(self.root / rel), "exec"), ns)  # noqa: S102 - vLLM's own code
        return ns

    def literal_attr(self, rel: str, cls: str, attr: str, env: dict) -> typing.Any:
        """Evaluate the class-body assignment `cls.attr` of `rel` in `env` (other classes'
        attributes reachable through `env`), or return None when the body has none."""
        for node in self.class_node(rel, cls).body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])
            if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                expr = ast.Expression(body=node.value)
                return eval(compile(expr, str(self.root / rel), "eval"), env)  # noqa: S307
        return None

    def base_names(self, rel: str, cls: str) -> list[str]:
        return [ast.unparse(b) for b in self.class_node(rel, cls).bases]
