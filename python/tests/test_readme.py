"""README.md stays current: its experiment table names exactly what `innet list` names, its
layout table names every crate and top-level folder, and it points at nothing outside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def section(title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.S | re.M)
    assert m, f"README has no '## {title}' section"
    return m.group(1)


def test_experiment_table_is_what_innet_list_names(innet_cmd):
    r = innet_cmd("list")
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    systems = {n.split(".")[0] for n in listed}
    named = set(re.findall(r"`([a-z0-9]+\.[a-z0-9_]+)`", section("Systems and their experiments")))
    named = {n for n in named if n.split(".")[0] in systems}
    assert named == listed, f"README lacks {sorted(listed - named)}; README names unknown {sorted(named - listed)}"


def test_layout_names_every_crate_and_folder():
    layout = section("Layout")
    rows = set(re.findall(r"^\| `([^`]+)` \|", layout, re.M))
    crates = {f"crates/{p.name}" for p in (REPO / "crates").iterdir() if (p / "Cargo.toml").exists()}
    folders = {"fuzz/", "scripts/", "bench/", "docs/", "examples/", "python/innet", "python/tests"}
    missing = (crates | folders) - rows
    assert not missing, f"README's layout table lacks {sorted(missing)}"
    gone = {r for r in rows if not (REPO / r.rstrip("/")).exists()}
    assert not gone, f"README's layout table names paths that do not exist: {sorted(gone)}"


def test_points_at_nothing_outside_the_repository():
    assert "shared/" not in README, "shared/ is not in the repository: cite papers by title and venue"
    assert "later, on real packets" not in README
