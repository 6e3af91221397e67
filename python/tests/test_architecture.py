"""The house's layering, checked from the sources (DESIGN.md §2):

- Rust crates (`cargo metadata`): the registry and wire depend on no innet crate; a system crate
  depends only on wire / switch / sim / dataplane / workloads / registry — never on a sibling
  system or on `basic`; only the PyO3 crate sees every system. The real-packet runtime (`switch`)
  and the application switch reach neither the simulator nor the simulated switch, even
  transitively (docs/architecture.md, "Crates").
- Python (`ast` over python/innet): no import cycles among the package's modules, counting
  imports inside functions too (a lazy import that closes a loop is still a loop).
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "python" / "innet"

SYSTEMS = {"innet-switchv2p", "innet-orbitcache", "innet-gigaflow", "innet-switchvm", "innet-appswitch"}
LOWER_LAYERS = {"innet-wire", "innet-switch", "innet-sim", "innet-dataplane", "innet-workloads", "innet-registry"}
# Who may depend on whom, for every workspace crate but the PyO3 front (which sees all).
ALLOWED = {
    "innet-registry": set(),
    "innet-wire": set(),
    "innet-workloads": set(),
    "innet-switch": {"innet-wire"},
    "innet-sim": {"innet-wire", "innet-registry"},
    "innet-dataplane": {"innet-wire", "innet-switch", "innet-sim", "innet-registry"},
    "innet-basic": LOWER_LAYERS,
    **{s: LOWER_LAYERS for s in SYSTEMS},
}


def workspace_deps() -> dict[str, set[str]]:
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not installed")
    r = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    packages = json.loads(r.stdout)["packages"]
    names = {p["name"] for p in packages}
    return {p["name"]: {d["name"] for d in p["dependencies"] if d["name"] in names} for p in packages}


def test_crates_depend_only_on_lower_layers():
    deps = workspace_deps()
    assert SYSTEMS | set(ALLOWED) - {"innet-basic"} <= set(deps), f"workspace crates changed: {sorted(deps)}"
    unlisted = set(deps) - set(ALLOWED) - {"innet-py"}
    assert not unlisted, f"crates without a layering rule here: {sorted(unlisted)}"
    bad = {c: sorted(d - ALLOWED[c]) for c, d in deps.items() if c in ALLOWED and d - ALLOWED[c]}
    assert not bad, f"dependencies outside the crate's layer (DESIGN.md §2): {bad}"


def test_real_packet_crates_build_without_the_simulator():
    deps = workspace_deps()
    for krate in ("innet-switch", "innet-appswitch"):
        seen, todo = set(), [krate]
        while todo:
            for d in deps[todo.pop()] - seen:
                seen.add(d)
                todo.append(d)
        assert "innet-wire" in seen, f"{krate}: the walk should reach the packet layer, saw {sorted(seen)}"
        assert not seen & {"innet-sim", "innet-dataplane"}, f"{krate} reaches the simulator: {sorted(seen)}"


def module_imports() -> dict[str, set[str]]:
    """innet module -> the innet modules it imports anywhere in its source."""
    modules = {f"innet.{p.stem}" if p.stem != "__init__" else "innet": p for p in PACKAGE.glob("*.py")}
    out: dict[str, set[str]] = {}
    for mod, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}
        out[mod] = {m for m in found if m in modules and m != mod and m != "innet"}
    return out


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_cycle_finder_finds_a_planted_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_python_modules_have_no_import_cycles():
    graph = module_imports()
    assert "innet.cli_sweep" in graph["innet.cli"], "the import scan lost the CLI's own imports"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
