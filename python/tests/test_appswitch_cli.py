"""The application switch's experiments and program are listed, and bad settings get one clear
line (no root needed; the real-server tests are in test_appswitch_netns.py)."""

from __future__ import annotations

import subprocess
import sys

from innet.netns import innet_command, innet_env


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*innet_command(), *args], capture_output=True, text=True, env=innet_env(), timeout=120)


def test_experiments_and_program_are_listed():
    out = run("list").stdout
    for e in ("appswitch.turnaround", "appswitch.cachesize", "appswitch.skew", "appswitch.readwrite",
              "appswitch.connections", "appswitch.lexical"):
        assert e in out
    assert "appswitch" in run("switch", "list").stdout


def test_bad_parameters_are_one_clear_line():
    r = run("run", "appswitch.turnaround", "--set", "bogus=1")
    assert r.returncode == 2, r.stderr
    # The registry's wording, the same for every experiment.
    assert "parameter 'bogus': unknown parameter" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run("run", "appswitch.skew", "--set", "zipfs=a,b")
    assert r.returncode == 2 and "parameter 'zipfs': expected each item to be a number, got 'a'" in r.stderr, r.stderr
    r = run("run", "appswitch.connections", "--set", "clients=3")
    assert r.returncode == 2 and "expected 1 or 2" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run("run", "appswitch.lexical", "--set", "key_lens=1")
    assert r.returncode == 2 and "key length 1" in r.stderr, r.stderr
