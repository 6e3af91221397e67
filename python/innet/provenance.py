"""Where a result came from: the git commit of the code that made it (with a ``+dirty`` mark
when the work tree had uncommitted changes), and whether a stored result is stale, i.e. made by
a commit other than the current one.

A result of another commit is still current when every file changed between that commit and
this one is *presentation*: documentation, tests, benchmarks, or the code that draws and judges
the page (it runs afresh whenever the page is made), or the manifests, whose run parameters the
report compares entry by entry (``run_spec_changed``); and a change inside one system's crate
leaves the other systems' results current (``can_change``). Anything else (the simulator, an
experiment runner, a server script) makes the result stale."""

from __future__ import annotations

import functools
import re
import subprocess
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"
# The keys of a manifest entry that decide which points run; the rest (paper numbers, plots, text,
# costs) only change how the page shows and judges them. The number of seeds is not among them: a
# point's parameters (its seed included) are its identity, so another seed count adds or leaves
# points without changing the ones that ran.
_RUN_KEYS = (
    "experiment", "fixed", "grid", "quick_fixed", "quick_grid", "standard_fixed", "standard_grid",
    "full_fixed", "full_grid", "results_of", "smoke", "resources", "exclusive", "configs",
)
# This module only judges whether a stored result is current: presentation (see below).
PRESENTATION = True
# Paths (prefixes) outside the Python package whose changes cannot change a stored result.
OUTSIDE_PACKAGE = (
    "docs/", "python/tests/", "bench/", ".ci/", "README.md", "DESIGN.md", "LICENSE",
    "scripts/reproduce.sh", "scripts/check_summaries.py", "scripts/summary_hashes.json",
    "scripts/fuzz.sh", "scripts/test.sh", "fuzz/",
    # The worked examples (docs/extending.md): crates nothing links (test_architecture checks).
    "examples/",
)
# A crate's examples, integration tests and benches are their own programs: nothing of them is
# linked into the library that `innet` runs, so changing them cannot change a result.
_CRATE_PROGRAMS = re.compile(r"crates/[^/]+/(examples|tests|benches)/")
_PACKAGE = Path(__file__).resolve().parent
# How a module or subpackage (in its __init__.py) of python/innet says it is presentation.
_MARK = re.compile(r"^PRESENTATION = True\b", re.M)


@functools.cache
def presentation_paths() -> tuple[str, ...]:
    """The paths (prefixes) whose changes cannot change a stored result: OUTSIDE_PACKAGE, and the
    modules and subpackages of python/innet that declare ``PRESENTATION = True`` (the plots, the
    page that judges, the manifests, this module). Derived from the package layout: a module added
    to ``plots/`` or ``report/`` is presentation as it lands, one added anywhere else is not."""
    found = []
    for p in sorted(_PACKAGE.iterdir()):
        src = p / "__init__.py" if p.is_dir() else p
        if src.suffix == ".py" and src.is_file() and _MARK.search(src.read_text()):
            found.append(f"python/innet/{p.name}" + ("/" if p.is_dir() else ""))
    return OUTSIDE_PACKAGE + tuple(found)


def is_presentation(path: str) -> bool:
    """Whether a changed file cannot change any result (see presentation_paths and _CRATE_PROGRAMS)."""
    return path.startswith(presentation_paths()) or _CRATE_PROGRAMS.match(path) is not None


# The crates that hold one system each (crates/<name>, package innet-<name>). Only the PyO3 front
# links them (python/tests/test_architecture.py enforces the layering), and every experiment is
# named after its system ("gigaflow.e2e"), so a change inside one can change only the results of
# that system's experiments.
SYSTEM_CRATES = ("appswitch", "gigaflow", "orbitcache", "switchv2p", "switchvm")
# Crates that belong to one system (only it and the PyO3 front link them): a change in one can
# change only that system's results.
SYSTEM_PARTS = {"ofswitch": "gigaflow", "pipebench": "gigaflow"}
_SYSTEM_CRATE = re.compile(r"crates/(" + "|".join((*SYSTEM_CRATES, *SYSTEM_PARTS)) + r")/")


def can_change(path: str, experiment: str | None = None) -> bool:
    """Whether a change to ``path`` can change a result of ``experiment`` (of any experiment when
    None): not presentation, and not inside another system's crate."""
    if is_presentation(path):
        return False
    m = _SYSTEM_CRATE.match(path)
    system = m and SYSTEM_PARTS.get(m.group(1), m.group(1))
    return not (system and experiment and not experiment.startswith(system + "."))


@functools.cache
def current_commit(where: str | Path | None = None) -> str:
    """Short commit of the checkout holding this package (``unknown`` outside git)."""
    cwd = Path(where) if where else Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{sha}+dirty" if dirty else sha


def is_stale(result_commit: str | None, current: str) -> bool:
    """A result is stale when its commit is unknown or differs from the current one. Results of an
    uncommitted tree (``+dirty``) are stale too: the tree they came from cannot be named."""
    if not result_commit or result_commit == UNKNOWN or current == UNKNOWN:
        return True
    return result_commit != current or result_commit.endswith("+dirty")


@functools.cache
def changed_paths(older: str, newer: str, where: str | Path | None = None) -> tuple[str, ...] | None:
    """Files that differ between two commits (None when git cannot compare them)."""
    cwd = Path(where) if where else Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "diff", "--name-only", older, newer], cwd=cwd, capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return tuple(line for line in out.splitlines() if line)


def only_presentation_changed(result_commit: str, current: str, experiment: str | None = None) -> bool:
    """Whether no file changed between the two commits can change a result of ``experiment`` (see
    ``can_change``; any experiment when None); False for a dirty tree on either side or commits
    git cannot compare."""
    if result_commit.endswith("+dirty") or current.endswith("+dirty") or UNKNOWN in (result_commit, current):
        return False
    changed = changed_paths(result_commit, current)
    return changed is not None and not any(can_change(p, experiment) for p in changed)


def _run_specs(text: str) -> dict[str, dict[str, Any]]:
    return {f.get("id"): {k: f.get(k) for k in _RUN_KEYS} for f in tomllib.loads(text).get("figure", [])}


@functools.cache
def _run_specs_at(commit: str, paper: str) -> dict[str, dict[str, Any]] | None:
    try:
        text = subprocess.run(["git", "show", f"{commit}:python/innet/papers/{paper}.toml"],
                              cwd=Path(__file__).resolve().parent, capture_output=True, text=True,
                              timeout=30, check=True).stdout
        return _run_specs(text)
    except (OSError, subprocess.SubprocessError, tomllib.TOMLDecodeError):
        return None


def run_spec_changed(fig: Any, commit: str) -> bool:
    """Whether the manifest at ``commit`` made ``fig``'s points differently (experiment,
    parameters) from the manifest here; True when that commit's manifest cannot be read."""
    old = _run_specs_at(commit, fig.paper)
    if old is None:
        return True
    here = _run_specs((resources.files("innet.papers") / f"{fig.paper}.toml").read_text())
    ids = [fig.id] + ([fig.results_of] if fig.results_of else [])
    return any(old.get(i) != here.get(i) for i in ids)
