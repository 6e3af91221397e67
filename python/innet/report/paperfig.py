"""Figures drawn like the papers': the panels, axes, units, scales and series a manifest entry's
``plot`` table declares, from the tables our runs stored, with the paper's values overlaid as
black markers (hollow and labelled "approx." when read off the paper's figure).

A ``plot`` spec::

    plot = { table = "points", x = "cache_fraction", xlabel = "...", xscale = "log",
             series = "scheme", kind = "line",            # or "bar" (x categorical)
             x_scale = 1e-6,                              # x values times this (units)
             panels = [ { y = "hit_rate", ylabel = "Hit rate (%)", scale = 100 }, ... ] }

``table = "summary"`` draws from the flattened summary instead: ``x`` is then a list of
categories (e.g. schemes) and each panel's ``y`` a metric template with ``{x}`` in it; a panel
with ``stack = [ { y = template, label = ... }, ... ]`` draws those parts stacked (each divided by
the ``per`` template when given: a breakdown relative to one part, as Gigaflow's Fig. 13), and the
entry's ``configs`` (named parameter sets) become grouped series. ``kind = "heatmap"`` draws a
table's ``series`` × ``x`` as a colour grid (SwitchV2P's Fig. 8). Legends go below the panels. A paper
number is placed on a panel when it carries ``at = { panel = Y, x = X }``. ``filter = { col =
value }`` (on the spec or on a panel) keeps the table rows with that value.
"""

from __future__ import annotations

import io
import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter, NullLocator  # noqa: E402
import pandas as pd  # noqa: E402

from innet import plots  # noqa: E402
from innet.plots.style import legend_below  # noqa: E402
from innet.reproduce.numbers import finite  # noqa: E402

PANEL_W, PANEL_H, MIN_W = 3.4, 2.7, 4.6
# Characters of a 9-point title per inch of figure width, with a margin: titles wrap, never clip.
CHARS_PER_INCH = 10



def config_of(row: dict[str, Any], configs: list[dict[str, str]]) -> str:
    """The name of the entry's config (named parameter set) a point was run with ("" if none)."""
    for c in configs:
        if all(str(row.get(f"param.{k}")) == str(v) for k, v in c.items() if k != "name"):
            return c["name"]
    return ""


def table_frame(rows: list[dict[str, Any]], table: str, configs: list[dict[str, str]] | None = None) -> pd.DataFrame:
    """One table from every ok point (with the point's seed, and its config's name when the entry
    has ``configs``, as columns), concatenated."""
    parts = []
    for r in rows:
        recs = (r.get("tables") or {}).get(table)
        if recs:
            df = pd.DataFrame(recs)
            df["_seed"] = str(r.get("param.seed", r.get("m.seed", "")))
            if configs:
                df["_config"] = config_of(r, configs)
            parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _summary_frame(rows: list[dict[str, Any]], spec: dict[str, Any]) -> pd.DataFrame:
    """Rows (x, panel y values) from summary metrics, mean over points. ``x_param`` makes each
    point's value of that parameter a category (e.g. one point per trace)."""
    out = []
    configs = spec.get("configs") or [{}]
    if spec.get("x_param"):
        key = f"param.{spec['x_param']}"
        cats = list(dict.fromkeys(str(r.get(key)) for r in rows))
        for cat in cats:
            for config in configs:
                mine = [r for r in rows if str(r.get(key)) == cat and config_of(r, configs if config else []) == config.get("name", "")]
                rec = {"_x": cat, "_s": config.get("name", "")}
                for p in spec.get("panels", []):
                    vals = [v for v in (finite(r.get("m." + p["y"])) for r in mine) if v is not None]
                    rec[p["y"]] = sum(vals) / len(vals) if vals else None
                out.append(rec)
        return pd.DataFrame(out)
    for cat in spec.get("x", []):
        for config in configs:  # ``configs``: one series per named parameter set (the entry's)
            mine = [r for r in rows if all(str(r.get(f"param.{k}")) == str(v) for k, v in config.items() if k != "name")]
            rec: dict[str, Any] = {"_x": str(cat), "_s": config.get("name", "")}

            def mean(template: str) -> float | None:
                vals = [finite(r.get("m." + template.format(x=cat))) for r in mine]  # noqa: B023
                vals = [v for v in vals if v is not None]
                return sum(vals) / len(vals) if vals else None

            for p in spec.get("panels", []):
                if p.get("stack"):  # a stacked breakdown: each part (over ``per`` when given)
                    per = mean(p["per"]) if p.get("per") else 1.0
                    parts = [mean(part["y"]) for part in p["stack"]]
                    rec[p["y"]] = None if per in (None, 0) or None in parts else sum(parts) / per
                    for i, v in enumerate(parts):
                        rec[f"{p['y']}#{i}"] = None if per in (None, 0) or v is None else v / per
                    continue
                rec[p["y"]] = mean(p["y"])
            out.append(rec)
    return pd.DataFrame(out)


def draw(spec: dict[str, Any], title: str, rows: list[dict[str, Any]], numbers: list[dict[str, Any]]) -> bytes | None:
    """PNG bytes of the figure, or None when the runs hold nothing to draw."""
    panels = spec.get("panels", [])
    if not panels or not rows:
        return None
    from_summary = spec.get("table") == "summary"
    df = _summary_frame(rows, spec) if from_summary else table_frame(rows, spec.get("table", "points"), spec.get("configs"))
    if df.empty:
        return None
    plots.style()
    n = len(panels)
    cols = min(n, int(spec.get("columns", 3)))
    nrows = math.ceil(n / cols)
    width = max(PANEL_W * cols, MIN_W)
    lines = textwrap.wrap(title, int(width * CHARS_PER_INCH))
    fig, axes = plt.subplots(nrows, cols, figsize=(width, PANEL_H * nrows + 0.25 * len(lines) + 0.3), squeeze=False)
    drew = False
    for i, p in enumerate(panels):
        ax = axes[i // cols][i % cols]
        drawn = _panel(ax, df, spec, p, from_summary)
        if not drawn:
            _no_data(ax)
        drew |= drawn
        _paper_markers(ax, spec, p, numbers, from_summary)
        ax.set_ylabel(p.get("ylabel", p["y"]), fontsize=8)
        ax.set_xlabel(spec.get("xlabel", spec.get("x", "")) if not from_summary else spec.get("xlabel", ""), fontsize=8)
        if p.get("yscale"):
            ax.set_yscale(p["yscale"])
        if p.get("title"):
            ax.set_title(p["title"], fontsize=8)
        ax.tick_params(labelsize=7)
    for j in range(n, nrows * cols):
        axes[j // cols][j % cols].set_visible(False)
    fig.suptitle("\n".join(lines), fontsize=9)
    legend_below(fig, fontsize=7)  # one legend below the panels, never over the data
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue() if drew else None


def _panel(ax, df: pd.DataFrame, spec: dict[str, Any], p: dict[str, Any], from_summary: bool) -> bool:
    y, scale = p["y"], float(p.get("scale", 1.0))
    if from_summary:
        d = df.dropna(subset=[y])
        if d.empty:
            return False
        cats = list(dict.fromkeys(d["_x"]))
        if p.get("stack"):
            bottom = [0.0] * len(cats)
            for i, part in enumerate(p["stack"]):
                vals = [float(v) * scale for v in d[f"{y}#{i}"]]
                ax.bar(range(len(cats)), vals, 0.6, bottom=bottom, label=part.get("label", part["y"]))
                bottom = [b + v for b, v in zip(bottom, vals)]
            ax.set_xticks(range(len(cats)), cats, rotation=30)
            ax.innet_categories = cats
            return True
        names = list(dict.fromkeys(d["_s"])) if "_s" in d.columns else [""]
        width = 0.8 / len(names)
        for k, name in enumerate(names):
            sub = d[d["_s"] == name] if name else d
            vals = dict(zip(sub["_x"], sub[y].astype(float) * scale))
            ax.bar([c + k * width - 0.4 + width / 2 for c in range(len(cats))], [vals.get(c, float("nan")) for c in cats], width,
                   color=None if name else "#4c72b0", label=name or None)
        ax.set_xticks(range(len(cats)), cats, rotation=30)
        ax.innet_categories = cats
        return True
    x, series = spec.get("x"), spec.get("series")
    for col, want in {**spec.get("filter", {}), **p.get("filter", {})}.items():
        if col not in df.columns:
            return False
        df = df[df[col].astype(str) == str(want)]
    if y not in df.columns or (x and x not in df.columns):
        return False
    if "_config" in df.columns and df["_config"].nunique() > 1:  # the judged config plain, the others named
        first = spec["configs"][0]["name"]
        tag = df["_config"].map(lambda c: "" if c == first else f" ({c})")
        if series:
            df = df.assign(**{series: df[series].astype(str) + tag})
        else:
            series = "_config"
    keys = [c for c in (series, x) if c]
    d = df.assign(_y=df[y].map(finite) * scale).dropna(subset=["_y"])
    if d.empty:
        return False
    g = d.groupby(keys, sort=False)["_y"].mean().reset_index() if keys else d
    groups = list(g.groupby(series, sort=False)) if series else [("", g)]
    if spec.get("kind", "line") == "heatmap" and series and x:  # rows: the series; columns: x; colour: y
        m = g.pivot(index=series, columns=x, values="_y")
        im = ax.imshow(m.to_numpy(dtype=float), aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(m.columns)), [str(c) for c in m.columns], rotation=30 if len(m.columns) > 4 else 0)
        ax.set_yticks(range(len(m.index)), [str(i) for i in m.index])
        for (r, c), v in pd.DataFrame(m.to_numpy(dtype=float)).stack().items():
            ax.text(c, r, f"{v:.3g}", ha="center", va="center", fontsize=6, color="white" if v < m.to_numpy(dtype=float).max() / 2 else "black")
        ax.figure.colorbar(im, ax=ax, fraction=0.05)
        ax.innet_categories = [str(c) for c in m.columns]
        ax.innet_heatmap = True
        return True
    if spec.get("kind", "line") == "bar":
        cats = list(dict.fromkeys(g[x].astype(str))) if x else [""]
        width = 0.8 / max(1, len(groups))
        for k, (name, sub) in enumerate(groups):
            vals = dict(zip(sub[x].astype(str), sub["_y"])) if x else {"": sub["_y"].mean()}
            color, other = _style(ax, str(name), spec)
            ax.bar([c + k * width - 0.4 + width / 2 for c in range(len(cats))], [vals.get(c, float("nan")) for c in cats],
                   width, label=str(name) or None, color=color, alpha=0.45 if other else 1.0)
        ax.set_xticks(range(len(cats)), cats, rotation=30 if len(cats) > 4 else 0)
        ax.innet_categories = cats
    else:
        xs: set[float] = set()
        for name, sub in groups:
            sub = sub.assign(_x=sub[x].map(finite) * float(spec.get("x_scale", 1.0))).dropna(subset=["_x"]).sort_values("_x")
            color, other = _style(ax, str(name), spec)
            ax.plot(sub["_x"], sub["_y"], marker="o", ms=3, label=str(name) or None, color=color, linestyle="--" if other else "-")
            xs |= set(sub["_x"])
        if not spec.get("xscale"):  # at most six labels: long decimals (0.0005 s steps) ran into each other
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        if spec.get("xscale"):
            ax.set_xscale(spec["xscale"])
            if spec["xscale"] == "log":  # ticks at the measured sizes, plainly numbered (no overlapping 2×10¹ minors)
                ax.xaxis.set_minor_formatter(NullFormatter())
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                if 0 < len(xs) <= 8:
                    ax.xaxis.set_major_locator(FixedLocator(sorted(xs)))
                    ax.xaxis.set_minor_locator(NullLocator())
    return True


def _style(ax, name: str, spec: dict[str, Any]) -> tuple[str, bool]:
    """A series' colour, the same on every panel and for its twin in another of the entry's
    configs ("switchv2p (default)"), and whether it is such a twin (drawn dashed or faded beside
    the judged config's)."""
    base, other = name, False
    for c in (spec.get("configs") or [])[1:]:
        if name.endswith(f" ({c['name']})"):
            base, other = name[: -len(c["name"]) - 3], True
    colors = ax.figure.__dict__.setdefault("innet_colors", {})
    return colors.setdefault(base, f"C{len(colors) % 10}"), other


def _no_data(ax) -> None:
    ax.text(0.5, 0.5, "no data in this run", ha="center", va="center", fontsize=8, color="#777", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _paper_markers(ax, spec: dict[str, Any], p: dict[str, Any], numbers: list[dict[str, Any]], from_summary: bool) -> None:
    if getattr(ax, "innet_heatmap", False):
        return  # a heat map's y axis holds the series: the paper's numbers are in the verdict table
    scale = float(p.get("scale", 1.0))
    kind = spec.get("kind", "line")
    placed_label = set()
    for n in numbers:
        at = n.get("at")
        if not at or at.get("panel") != p["y"]:
            continue
        approx = bool(n.get("approx"))
        label = "paper (approx., read off the figure)" if approx else "paper (stated)"
        xv = at.get("x")
        if from_summary or kind == "bar":
            cats = getattr(ax, "innet_categories", [])
            if str(xv) not in cats:
                continue
            xpos: Any = cats.index(str(xv))
        else:
            xpos = finite(xv)
            if xpos is None:
                continue
            xpos *= float(spec.get("x_scale", 1.0))
        # at.y_scale: the panel draws the metric in other units (e.g. a fraction of line rate on a Gb/s panel)
        ax.plot([xpos], [float(n["value"]) * float(at.get("y_scale", scale))], linestyle="none", marker="D", ms=6,
                markerfacecolor="none" if approx else "black", markeredgecolor="black",
                label=None if label in placed_label else label, zorder=5)
        placed_label.add(label)
