"""The notebook API: innet.run returns DataFrames; errors are Python exceptions."""

import pandas as pd
import pytest

import innet


def test_run_returns_dataframes():
    r = innet.run("basic.fattree", quick=True, flows=120, load=0.4)
    assert r.summary["flows"] == 120 and r.summary["offered_load"] == 0.4
    assert isinstance(r.tables["flows"], pd.DataFrame)
    assert set(r.tables) == {"flows", "switches", "ports"}
    assert r.tables["switches"]["rx_packets"].sum() > 0


def test_progress_is_reported_and_ends_at_one():
    seen = []
    innet.run("basic.fattree", quick=True, flows=100, progress=seen.append)
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)


def test_errors_are_exceptions():
    with pytest.raises(innet.UserInputError, match="'load'"):
        innet.run("basic.fattree", quick=True, load=7)
    with pytest.raises(innet.UserInputError, match="unknown experiment"):
        innet.run("nope")


def test_list_experiments_documents_parameters():
    (e,) = [e for e in innet.list_experiments() if e["name"] == "basic.fattree"]
    names = {p["name"] for p in e["params"]}
    assert {"load", "trace", "flows", "seed"} <= names
    assert all(p["doc"] for p in e["params"])
