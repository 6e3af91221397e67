"""The scripts that build and run the papers' own artifacts beside innet (bench/artifacts/):
they refuse bad input with a message naming what is wrong, export a partial mirror without
losing track of what it lacks, and pass the artifact exactly the flags its own sweep script
passes, with the cache split innet uses for the same point."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ART = REPO / "bench" / "artifacts"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ART / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}).stdout.strip()


@pytest.fixture()
def repo_missing_a_blob(tmp_path):
    """A repository whose copy lacks one blob, as a size-limited mirror does."""
    r = tmp_path / "src"
    (r / "sub").mkdir(parents=True)
    (r / "a.txt").write_text("alpha\n")
    (r / "sub" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (r / "sub" / "run.sh").chmod(0o755)
    (r / "big.bin").write_text("large\n")
    git(r, "init", "-q")
    git(r, "add", ".")
    git(r, "commit", "-qm", "x")
    sha = git(r, "rev-parse", "HEAD:big.bin")
    (r / ".git" / "objects" / sha[:2] / sha[2:]).unlink()
    return r


def test_git_export_writes_what_is_there_and_names_what_is_not(repo_missing_a_blob, tmp_path):
    dest = tmp_path / "out"
    r = subprocess.run([sys.executable, str(ART / "git_export.py"), str(repo_missing_a_blob), "HEAD", str(dest)],
                       capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "not in this copy: big.bin" in r.stderr
    assert (dest / "a.txt").read_text() == "alpha\n"
    assert (dest / "sub" / "run.sh").stat().st_mode & 0o111, "executable bit kept"
    assert not (dest / "big.bin").exists()


def test_git_export_refuses_an_unknown_revision(repo_missing_a_blob, tmp_path):
    r = subprocess.run([sys.executable, str(ART / "git_export.py"), str(repo_missing_a_blob), "no-such-rev", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot list no-such-rev" in r.stderr


@pytest.mark.parametrize("args, says", [
    ([], "usage:"),
    (["/nonexistent/switchv2p", "/nonexistent/ns3"], "SwitchV2P repository not found"),
])
def test_build_script_names_what_is_missing(args, says):
    r = subprocess.run(["bash", str(ART / "switchv2p.sh"), *args], capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr, r.stderr


def test_build_script_refuses_a_repository_that_is_not_the_artifact(repo_missing_a_blob, tmp_path):
    r = subprocess.run(["bash", str(ART / "switchv2p.sh"), str(repo_missing_a_blob), str(repo_missing_a_blob), str(tmp_path / "b")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "is it acsl-technion/SwitchV2P" in r.stderr, r.stderr


def test_artifact_flags_are_run_py_s_and_the_split_is_innets():
    c = load("switchv2p_compare")
    # run.py: mem_size = int(p × 10240) split over 80 switches, 4 gateway ToRs or 32 ToRs.
    assert [c.per_switch_memory("switchv2p", p) for p in (0.01, 0.5, 1500)] == [1, 64, 192000]
    assert c.per_switch_memory("gwcache", 0.5) == 1280 and c.per_switch_memory("bluebird", 0.5) == 160
    args = c.artifact_args("switchv2p", 0.5, Path("t.csv"), Path("p.json"), Path("o.json"), udp=False)
    assert "--P4SwitchApp::MemorySize=64" in args and "--P4SwitchApp::SourceLearning=true" in args
    assert "--P4SwitchApp::GenerateProbability=0.005" in args and "--simMode=SwitchV2P" in args
    assert "--gatewayPerFlowLoadBalancing" in args and "--udpMode" not in args
    ll = c.artifact_args("locallearning", 0.5, Path("t"), Path("p"), Path("o"), udp=True)
    assert ll[0] == "--udpMode" and "--P4SwitchApp::RandomHashFunction=true" in ll
    # Table 4: run_migration_test.sh's five modes.
    bf = c.table4_args("switchv2p_invalidations_bf", Path("p"), Path("t"), Path("o"))
    assert "--P4SwitchApp::BloomFilter=true" in bf and "--P4SwitchApp::GenerateInvalidations=true" in bf
    assert "--migrationContainerId=5202" in bf and "--P4SwitchApp::MemorySize=12" in bf


def test_innet_splits_the_cache_as_the_artifact_run(innet_cmd, tmp_path):
    """The same point on both sides: innet's slots per switch equal run.py's for every scheme."""
    c = load("switchv2p_compare")
    for scheme in ("switchv2p", "gwcache"):
        out = tmp_path / scheme
        r = innet_cmd("run", "switchv2p.cachesize", "--quick", "--set", f"schemes={scheme}",
                      "--set", "cache_fractions=0.5", "--out", str(out), "--no-plots")
        assert r.returncode == 0, r.stderr
        slots = json.loads((out / "summary.json").read_text())["schemes"][scheme]["cache_slots_per_switch"]
        assert slots == c.per_switch_memory(scheme, 0.5)


def test_trim_keeps_the_rows_that_start_in_the_window(tmp_path):
    c = load("switchv2p_compare")
    src = tmp_path / "t.csv"
    src.write_text("1,2,0,1,100\n3,4,999999.0,2,200\n5,6,1000000,3,300\n")
    assert c.trim_trace(src, 1.0, tmp_path / "o.csv") == 2
    assert (tmp_path / "o.csv").read_text() == "1,2,0,1,100\n3,4,999999.0,2,200\n"
