#!/usr/bin/env python3
"""Re-judge a committed docs/REPRODUCED.md under the current manifests and verdict rules, from the
values the page prints (three significant digits, per seed where it lists them): which verdicts
move, before a full standard run regenerates the page. An estimate, not a result: rows new to the
manifest have no value on the old page, and entries whose run parameters changed (SwitchV2P's,
now judged in the authors' artifact's settings, marked (*)) are re-judged on the values the page
printed for the old settings.

    python3 scripts/rejudge_page.py [--page REV:docs/REPRODUCED.md] [--manifests REV]

``--manifests REV`` (default: the page's own commit's parent, i.e. the manifests the page was
judged with) maps the page's section titles to entries."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
import compare_pages  # noqa: E402  (this folder: the one reader of a page's rows)
from innet import reproduce  # noqa: E402
from innet.report import verdict  # noqa: E402
from innet.reproduce import numbers  # noqa: E402

PAPERS = ("appswitch", "gigaflow", "orbitcache", "switchv2p", "switchvm")


def git_show(spec: str) -> str:
    return subprocess.run(["git", "show", spec], capture_output=True, text=True, check=True).stdout


def num(x: str) -> float | None:
    return numbers.finite(x.strip().replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default="main:docs/REPRODUCED.md", help="git REV:PATH of the page (default main's)")
    ap.add_argument("--manifests", default="main", help="git revision whose manifests the page was judged with")
    a = ap.parse_args()
    md = git_show(a.page)
    titles = {}
    for p in PAPERS:
        for f in tomllib.loads(git_show(f"{a.manifests}:python/innet/papers/{p}.toml")).get("figure", []):
            titles[f["title"]] = (p, f["id"])
    new = reproduce.load_papers()
    before, after = {}, {}
    # The page's rows read by their column names (a table may have an "authors' artifact" column).
    for (title, label), row in compare_pages.parse(md)[2].items():
        cur = titles.get(title)
        if not cur:
            continue
        ours_s, old, seeds = row["ours"], row["verdict"], row["seeds"]
        before[old] = before.get(old, 0) + 1
        paper, fid = cur
        fig = next(f for f in new[paper].figures if f.id == fid)
        n = next((x for x in fig.paper_numbers if x["label"] == label), None)
        if n is None:
            print(f"{paper}/{fid} | {label} | {old} | (row removed)")
            continue
        vals = {}
        m = re.match(r"agree \((.*)\)", seeds)
        if m:
            vals = {str(i + 1): num(x) for i, x in enumerate(m.group(1).split(" / ")) if num(x) is not None}
        elif seeds.startswith("DIFFER"):
            vals = {s: num(x) for s, x in re.findall(r"(\d+): [a-z ]+ \(([^)]*)\)", seeds) if num(x) is not None}
        o = num(ours_s)
        if "interval" in n:  # the page does not print the intervals: an unresolved one moves to its own column
            new_v, why = (verdict.NOT_RESOLVED if old == verdict.NOT_COMPARABLE and o is not None else old), "interval"
        else:
            spread = max(vals.values()) - min(vals.values()) if len(vals) > 1 else 0.0
            js = [verdict.judge(n, o, True, None, spread)] + [verdict.judge(n, v, True) for v in vals.values()]
            w = max(js, key=lambda j: verdict.ORDER.index(j.verdict))
            new_v, why = w.verdict, w.why
        after[new_v] = after.get(new_v, 0) + 1
        if new_v != old:
            star = " (*)" if fig.configs else ""
            print(f"{paper}/{fid}{star} | {label} | {old} → {new_v} | ours {ours_s}: {why}")
    print("(*): the entry now runs configs and is judged on the first (the authors' artifact's settings); the page's values are\n"
          "     from the run it had (our default), so its rows are re-judged on those values: re-run it to judge it properly")
    print("page's verdicts:", before)
    print("re-judged (rows still in the manifest):", after)


if __name__ == "__main__":
    main()
