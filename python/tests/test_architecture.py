"""The house's layering, checked from the sources (DESIGN.md §2):

- Rust crates (`cargo metadata`): the registry and wire depend on no innet crate; a system crate
  depends only on wire / switch / sim / dataplane / workloads / registry — never on a sibling
  system or on `basic`; only the PyO3 crate sees every system. The real-packet runtime (`switch`)
  and the application switch reach neither the simulator nor the simulated switch, even
  transitively (docs/architecture.md, "Crates"). The worked examples (examples/*,
  docs/extending.md) may build on one system; no crate links them.
- Code in its layer (sources): the application protocols' byte formats (CQL, RESP, memcached)
  are `innet_wire` modules and the application switch defines none of their types; workload
  generators (Zipf key popularity, generated traces) live in `innet-workloads`, not in a system.
- Python (`ast` over python/innet and its subpackages): no import cycles among the package's
  modules, counting imports inside functions too (a lazy import that closes a loop is still a
  loop), and none among its jobs (the subpackages cli/, plots/, reproduce/, report/, appswitch/,
  switchvm/ and the top-level modules): the plots read nothing of the reproduction, and nothing
  that makes a result reads the page or the plots.
"""

from __future__ import annotations

import ast
import json
import re
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
    # Gigaflow's parts: the vSwitch it caches for, and its benchmark inputs.
    "innet-ofswitch": LOWER_LAYERS,
    "innet-pipebench": LOWER_LAYERS | {"innet-ofswitch"},
    "innet-gigaflow": LOWER_LAYERS | {"innet-ofswitch", "innet-pipebench"},
}
# The worked examples of docs/extending.md (examples/*): a researcher's crate built on a system,
# as any outside crate would be. Nothing links them.
EXAMPLES = {"v2p-twoway": LOWER_LAYERS | {"innet-switchv2p"}}
ALLOWED.update(EXAMPLES)
# Crates that belong to one system: only it (and the PyO3 front) links them, so provenance may
# count a change in them as that system's (provenance.SYSTEM_PARTS).
PARTS = {"innet-ofswitch": "innet-gigaflow", "innet-pipebench": "innet-gigaflow"}


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
    from innet import provenance

    # The report keeps one system's results current across another system's crate changes
    # (provenance.can_change): that holds only while no crate but the PyO3 front links a system.
    assert {f"innet-{s}" for s in provenance.SYSTEM_CRATES} == SYSTEMS
    deps = workspace_deps()
    assert SYSTEMS | set(ALLOWED) - {"innet-basic"} <= set(deps), f"workspace crates changed: {sorted(deps)}"
    unlisted = set(deps) - set(ALLOWED) - {"innet-py"}
    assert not unlisted, f"crates without a layering rule here: {sorted(unlisted)}"
    bad = {c: sorted(d - ALLOWED[c]) for c, d in deps.items() if c in ALLOWED and d - ALLOWED[c]}
    assert not bad, f"dependencies outside the crate's layer (DESIGN.md §2): {bad}"
    users = {c for c, d in deps.items() if d & set(EXAMPLES)}
    assert not users, f"{sorted(users)} link an example crate"
    assert all(provenance.is_presentation(f"examples/{e}/src/lib.rs") for e in EXAMPLES)
    assert {f"innet-{p}": f"innet-{s}" for p, s in provenance.SYSTEM_PARTS.items()} == PARTS
    for part, owner in PARTS.items():
        users = {c for c, d in deps.items() if part in d} - {"innet-py"}
        assert users <= {owner} | set(PARTS), f"{part} belongs to {owner}, yet {sorted(users - {owner})} link it"


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


def rust_sources(crate: str) -> dict[Path, str]:
    """A crate's library sources (src/, not its tests), by path."""
    return {p: p.read_text() for p in sorted((REPO / "crates" / crate / "src").rglob("*.rs"))}


# `pub struct|enum|trait Name` anywhere in a file (public types, including those of inner modules).
PUBLIC_TYPE = re.compile(r"^\s*pub (?:struct|enum|trait) (\w+)", re.M)
# Any type definition, whatever its visibility.
ANY_TYPE = re.compile(r"^\s*(?:pub(?:\([^)]*\))? )?(?:struct|enum|trait) (\w+)", re.M)
WIRE_PROTOCOLS = {"cql": "Cassandra's native protocol", "resp": "Redis", "memcache": "memcached's text protocol"}


def wire_protocol_types() -> set[str]:
    wire = REPO / "crates/wire/src"
    names: set[str] = set()
    for m in WIRE_PROTOCOLS:
        for p in [wire / f"{m}.rs", *sorted((wire / m).glob("*.rs"))]:
            names |= set(PUBLIC_TYPE.findall(p.read_text()))
    return names


def test_protocol_codecs_live_in_wire_and_appswitch_defines_none():
    wire = REPO / "crates/wire/src"
    lib = (wire / "lib.rs").read_text()
    for m, what in WIRE_PROTOCOLS.items():
        assert (wire / f"{m}.rs").exists() and f"pub mod {m};" in lib, f"{what} should be innet_wire::{m}"
    types = wire_protocol_types()
    assert {"FrameReader", "RespReader", "McReader", "Statement"} <= types, f"the scan lost the codecs: {sorted(types)}"
    sources = rust_sources("appswitch")
    copies = {str(p.relative_to(REPO)): sorted(set(ANY_TYPE.findall(t)) & types) for p, t in sources.items()}
    copies = {p: names for p, names in copies.items() if names}
    assert not copies, f"the application switch defines wire-format types (they belong in crates/wire): {copies}"
    used = "\n".join(sources.values())
    for m in WIRE_PROTOCOLS:
        assert f"innet_wire::{m}" in used, f"appswitch should read {WIRE_PROTOCOLS[m]} through innet_wire::{m}"


# Where a workload is generated: a Zipf sampler built, or trace rows written.
GENERATOR = re.compile(r"\bZipf\s*::\s*new\b|\bTraceRow\s*\{")
# A system may draw from innet-workloads' own sampler (gigaflow ranks its rule chains and draws
# them with `innet_workloads::zipf::Zipf`); what it may not do is bring its own.
USES_WORKLOADS_ZIPF = re.compile(r"use\s+innet_workloads::(\{[^}]*\bzipf::Zipf\b|zipf::Zipf\b)")


def generator_sites(text: str) -> list[int]:
    """1-based lines of `text` that generate a workload."""
    own_zipf = not USES_WORKLOADS_ZIPF.search(text) or "rand_distr" in text
    return [i for i, line in enumerate(text.splitlines(), 1)
            if GENERATOR.search(line) and not line.lstrip().startswith("//")
            and (own_zipf or "TraceRow" in line)]


def test_generator_scan_finds_a_planted_generator():
    assert generator_sites("use x;\nlet z = rand_distr::Zipf::new(n, 0.99)?;\n") == [2]
    assert generator_sites("rows.push(TraceRow { src_vm: 1 });\n// TraceRow { in a comment\n") == [1]
    assert generator_sites("let z = zipf.sample(rng);\n") == []
    assert generator_sites("use innet_workloads::{caida, zipf::Zipf};\nlet z = Zipf::new(n, s)?;\n") == []
    assert generator_sites("use innet_workloads::zipf::Zipf;\nuse rand_distr::Zipf as Z;\nlet z = Zipf::new(n, s)?;\n") == [3]


def test_workload_generators_live_in_workloads():
    workloads = "\n".join(rust_sources("workloads").values())
    assert generator_sites(workloads), "the scan should see the generators in innet-workloads"
    found = {}
    for krate in sorted(SYSTEMS | set(PARTS)):
        for p, text in rust_sources(krate.removeprefix("innet-")).items():
            if lines := generator_sites(text):
                found[str(p.relative_to(REPO))] = lines
    assert not found, f"workload generators outside crates/workloads (file: lines): {found}"


def module_name(path: Path) -> str:
    """python/innet/a/b.py -> innet.a.b; a package's __init__.py is the package."""
    parts = ("innet", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports() -> dict[str, set[str]]:
    """innet module -> the innet modules it imports anywhere in its source."""
    modules = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
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
    assert "innet.cli.sweep" in graph["innet.cli"], "the import scan lost the CLI's own imports"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def job(module: str) -> str:
    """The package's job a module belongs to: its top-level subpackage or module (innet.plots.x -> plots)."""
    return module.split(".")[1]


def job_imports(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """job -> the other jobs its modules import."""
    out: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        if mod != "innet":
            out.setdefault(job(mod), set()).update(job(d) for d in deps if job(d) != job(mod))
    return out


def test_job_scan_sees_subpackages_and_a_planted_loop():
    graph = {"innet.plots": {"innet.plots.style"}, "innet.plots.gigaflow": {"innet.reproduce"},
             "innet.reproduce": {"innet.reproduce.sweep"}, "innet.reproduce.sweep": {"innet.plots.style"}}
    jobs = job_imports(graph)
    assert jobs == {"plots": {"reproduce"}, "reproduce": {"plots"}}
    assert find_cycle(jobs) == ["plots", "reproduce", "plots"]


def test_python_jobs_have_no_loop_and_plots_read_no_reproduction():
    graph = module_imports()
    assert "innet.reproduce.sweep" in graph["innet.report"], "the import scan lost a subpackage's imports"
    jobs = job_imports(graph)
    assert {"cli", "plots", "reproduce", "report", "appswitch", "switchvm"} <= set(jobs), f"jobs: {sorted(jobs)}"
    assert {"reproduce", "plots"} <= jobs["report"], "the scan lost the page's imports"
    cycle = find_cycle(jobs)
    assert cycle is None, "a loop among the package's jobs: " + " -> ".join(cycle)
    # The plots draw what they are given (the CLI passes the paper's numbers): no manifest, no page.
    assert not jobs["plots"], f"plots/ imports {sorted(jobs['plots'])}"
    # Nothing that makes a result reads the page, the plots or the CLI: presentation stays
    # presentation (innet.provenance counts a change to plots/ or report/ as unable to change a result).
    for maker in ("reproduce", "appswitch", "switchvm", "api", "netns", "stats"):
        bad = jobs.get(maker, set()) & {"plots", "report", "cli"}
        assert not bad, f"{maker} imports {sorted(bad)}"


def test_presentation_is_the_packages_that_say_so():
    from innet import provenance

    declared = {f"python/innet/{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")
                if re.search(r"^PRESENTATION = True\b", p.read_text(), re.M)}
    assert declared == {"python/innet/plots/", "python/innet/report/", "python/innet/papers/"}
    paths = provenance.presentation_paths()
    assert declared <= set(paths) and "python/innet/provenance.py" in paths
    assert not any(p.startswith(("python/innet/reproduce", "python/innet/cli", "python/innet/appswitch")) for p in paths)
