"""Command-line input every ``innet`` command shares: the error for bad input (one line, exit 2)
and the ``--set key=value`` parser."""

from __future__ import annotations


class UserError(Exception):
    """Bad input on the command line, reported as ``innet: error: ...`` with exit code 2."""


def parse_sets(sets: tuple[str, ...]) -> dict[str, str]:
    """``("k=v", ...)`` as ``{k: v}``; an item without ``=`` or with an empty key is a UserError."""
    out: dict[str, str] = {}
    for s in sets:
        key, sep, value = s.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set expects key=value, got '{s}'")
        out[key.strip()] = value.strip()
    return out
