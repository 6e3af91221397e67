"""The docs stay current: docs/cli.md documents exactly the commands (and options) `innet` has,
walking its click command tree recursively."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import click

from innet.cli import cli

REPO = Path(__file__).resolve().parents[2]
CLI_MD = REPO / "docs" / "cli.md"


def command_tree(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], click.Command]:
    """Every command and subcommand under `group`, by its path of names (groups included)."""
    out: dict[tuple[str, ...], click.Command] = {}
    for name, cmd in group.commands.items():
        path = prefix + (name,)
        out[path] = cmd
        if isinstance(cmd, click.Group):
            out.update(command_tree(cmd, path))
    return out


def option_names(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts} - {"-h", "--help"}


def code_texts(markdown: str) -> list[str]:
    """The page's code: each line of a fenced block, and each inline code span elsewhere (a span
    may run over a line break within its paragraph)."""
    out: list[str] = []
    prose: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            prose.append("")
            continue
        if fenced:
            out.append(line)
        else:
            prose.append(line.replace("\\|", "|"))
    for para in re.split(r"\n\s*\n", "\n".join(prose)):
        out += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", para)]
    return out


STOP = {">", ">>", "&&", ";", "#", "2>", "2>&1"}


def mentions(markdown: str) -> list[tuple[tuple[str, ...], list[str], str]]:
    """Each `innet ...` command line the page shows: (command path, its option words, the text).
    A name that is not a subcommand of the group before it yields a path ending in that name."""
    tree = command_tree()
    found = []
    for code in code_texts(markdown):
        for m in re.finditer(r"(?<![\w./-])innet(?![\w.:])", code):
            path: tuple[str, ...] = ()
            opts: list[str] = []
            for tok in code[m.end():].split():
                if tok in STOP or tok[0] in "#(" or tok == "innet":
                    break
                node = tree.get(path) if path else cli
                if node is None:  # an unknown name: reported below
                    break
                if isinstance(node, click.Group):
                    if re.fullmatch(r"[a-z][a-z0-9-]*([/|][a-z][a-z0-9-]*)*", tok):
                        # `innet gigaflow pipeline|traffic|traversals`: each alternative.
                        alts = re.split(r"[/|]", tok)
                        for alt in alts[1:]:
                            found.append((path + (alt,), [], code))
                        path += (alts[0],)  # a name that is no subcommand is reported as unknown
                        continue
                    break
                opt = re.match(r"\[*(--?[A-Za-z][\w-]*)", tok)
                if opt:
                    opts.append(opt.group(1))
            if path:
                found.append((path, opts, code))
    return found


def cli_page_problems(markdown: str) -> list[str]:
    """What docs/cli.md gets wrong about the command tree; empty when it is current."""
    tree = command_tree()
    problems = []
    shown = mentions(markdown)
    for path, opts, code in shown:
        if path not in tree:
            problems.append(f"names `innet {' '.join(path)}`, which is not a command (in `{code}`)")
            continue
        unknown = set(opts) - option_names(tree[path]) - {"--help", "-h"}
        if unknown:
            problems.append(f"gives `innet {' '.join(path)}` options it does not have: {sorted(unknown)} (in `{code}`)")
    index = set()
    for line in markdown.splitlines():
        m = re.match(r"\| `innet ([^`]*)` \|", line)
        if m:
            words = []
            for tok in m.group(1).split():
                if not re.fullmatch(r"[a-z][a-z0-9-]*", tok):
                    break
                words.append(tok)
                if not isinstance(tree.get(tuple(words)), click.Group):
                    break
            index.add(tuple(words))
    for path, cmd in sorted(tree.items()):
        if isinstance(cmd, click.Group):
            continue
        name = "innet " + " ".join(path)
        if path not in index:
            problems.append(f"the command table has no row for `{name}`")
        documented = {o for p, opts, _ in shown if p == path for o in opts}
        missing = option_names(cmd) - documented
        # A command's short and long forms are one option: either one documents it.
        missing = {o for o in missing if not any(alias in documented for p in cmd.params
                                                  if isinstance(p, click.Option) and o in p.opts for alias in p.opts)}
        if missing:
            problems.append(f"no synopsis of `{name}` shows its options {sorted(missing)}")
    return problems


def test_cli_page_lists_every_command_and_option():
    problems = cli_page_problems(CLI_MD.read_text())
    assert not problems, "docs/cli.md is stale:\n" + "\n".join(problems)


def test_a_stale_cli_page_fails():
    page = CLI_MD.read_text()
    # A command dropped from the table and its sections.
    dropped = "\n".join(line for line in page.splitlines() if "innet switchvm disasm" not in line)
    assert any("`innet switchvm disasm`" in p for p in cli_page_problems(dropped))
    # A command that does not exist, and an option a command lacks.
    assert any("innet frobnicate" in p for p in cli_page_problems(page + "\n`innet frobnicate --now`\n"))
    assert any("innet bench nosuch" in p for p in cli_page_problems(page + "\n`innet bench nosuch`\n"))
    assert any("--frob" in p for p in cli_page_problems(page + "\n```\ninnet run X --frob 1\n```\n"))
    # An option the command has but no synopsis shows.
    no_ct = page.replace("[--ct-next FLAGS ...] ", "").replace("--ct-next", "ct-next")
    assert any("--ct-next" in p for p in cli_page_problems(no_ct))


def test_other_pages_name_only_commands_that_exist():
    """README.md and every docs page: each `innet ...` they show is a command with those options."""
    tree = command_tree()
    problems = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for path, opts, code in mentions(page.read_text()):
            rel = page.relative_to(REPO)
            if path not in tree:
                problems.append(f"{rel}: `innet {' '.join(path)}` is not a command (in `{code}`)")
            elif set(opts) - option_names(tree[path]) - {"--help", "-h"}:
                problems.append(f"{rel}: `innet {' '.join(path)}` has no option "
                                f"{sorted(set(opts) - option_names(tree[path]) - {'--help', '-h'})} (in `{code}`)")
    assert not problems, "\n".join(problems)


# --- every repository path the docs cite exists -------------------------------------------------

# shared/ is the team's notes beside the repository, never in it: citing it is a dead reference.
CITED = re.compile(r"(?<![\w/.~-])((?:crates|examples|python|scripts|bench|docs|fuzz|shared)/[\w./*{},-]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _expand(path: str) -> list[str]:
    """`bench/flows/ft{4,8}_udp.htsim` -> both names."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m.group(1).split(",") for x in _expand(path[: m.start()] + alt + path[m.end():])]


DOC_NAMES = {"README", "REPRODUCED", "RESULTS", "DESIGN", "LICENSE", "CHANGELOG"}


def _exists(path: str, base: Path = REPO) -> bool:
    if (base / path).exists():
        return True
    # A placeholder component (`papers/PAPER.toml`, `fuzz/seeds/T`) or a glob stands for any name.
    def placeholder(part: str) -> str:
        stem, dot, ext = part.partition(".")
        return "*" + dot + ext if re.fullmatch(r"[A-Z][A-Z_]*", stem) and stem not in DOC_NAMES else part

    pattern = "/".join(placeholder(part) for part in path.rstrip("/").split("/"))
    return any(ch in pattern for ch in "*?[") and any(base.glob(pattern))


def _generated(path: str) -> bool:
    """A path a command creates and git ignores (`fuzz/corpus/T`): cited, never checked in."""
    r = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO)
    return r.returncode == 0


def cited_paths(markdown: str) -> list[tuple[int, str, bool]]:
    """(line, path, relative to the page?) for every repository path the page cites: a path
    under crates/, examples/, python/, scripts/, bench/, docs/ or fuzz/ (in code or prose; a Rust item after
    `::` and trailing punctuation dropped), and every relative link target."""
    out = []
    for n, line in enumerate(markdown.splitlines(), 1):
        for m in CITED.finditer(line):
            path = m.group(1).split("::")[0].rstrip(".,:;")
            out += [(n, p, False) for p in _expand(path) if p.count("/") and p.split("/", 1)[1]]
        for m in LINK.finditer(line):
            target = m.group(1).split("#")[0]
            if target and not re.match(r"[a-z]+:", target):
                out.append((n, target, True))
    return out


def dead_references(page: Path, text: str | None = None) -> list[str]:
    dead = []
    for n, path, relative in cited_paths(page.read_text() if text is None else text):
        base = page.parent if relative else REPO
        if not _exists(path, base) and not (not relative and _generated(path)):
            dead.append(f"{page.relative_to(REPO)}:{n}: {path}")
    return dead


def test_every_path_the_docs_cite_exists():
    pages = sorted([*(REPO / "docs").glob("*.md"), *(REPO / "docs" / "results").glob("*.md")])
    assert len(pages) > 10
    dead = [d for page in pages for d in dead_references(page)]
    assert not dead, "docs cite paths that are not in the repository (cite where it moved):\n" + "\n".join(dead)


def test_a_dead_reference_fails():
    text = ("See crates/sim/src/engine.rs and `crates/sim/engine.rs`, [x](figures/nothing.png),\n"
            "bench/flows/ft{4,8}_udp.htsim, `fuzz/seeds/T`, crates/nosuch/, fuzz/corpus/T, docs/README.md, docs/results/engines.md.\n"
            "As shared/reference/switchv2p-artifact.md records.\n")
    dead = dead_references(REPO / "docs" / "planted.md", text)
    assert dead == ["docs/planted.md:1: crates/sim/engine.rs",
                    "docs/planted.md:1: figures/nothing.png",
                    "docs/planted.md:2: crates/nosuch/",
                    "docs/planted.md:2: docs/README.md",
                    "docs/planted.md:2: docs/results/engines.md",
                    "docs/planted.md:3: shared/reference/switchv2p-artifact.md"], dead


# `file.rs::Item` or `file.rs::Type::method`: a Rust item a page points at in a file.
ITEM = re.compile(r"(?<![\w/.~-])((?:crates|examples)/[\w./-]+\.rs)((?:::\w+)+)")
DEFINES = r"\b(?:fn|struct|enum|trait|const|static|type|mod)\s+{}\b"


def missing_items(markdown: str) -> list[str]:
    """The `file.rs::Item(::item)` citations of a page whose file does not define every item
    named (a function, type, trait, const, static or module of that name): a page that walks
    through code by file and item (docs/extending.md) fails as soon as one is renamed."""
    out = []
    for n, line in enumerate(markdown.splitlines(), 1):
        for m in ITEM.finditer(line):
            path = REPO / m.group(1)
            text = path.read_text() if path.is_file() else ""
            out += [f"{n}: {m.group(0)}" for item in m.group(2).split("::")[1:] if not re.search(DEFINES.format(item), text)]
    return out


def test_every_item_the_docs_cite_is_defined_where_they_say():
    pages = sorted([*(REPO / "docs").glob("*.md"), *(REPO / "docs" / "results").glob("*.md")])
    missing = [f"{page.relative_to(REPO)}:{m}" for page in pages for m in missing_items(page.read_text())]
    assert not missing, "docs name Rust items their files do not define:\n" + "\n".join(missing)
    assert (REPO / "docs" / "extending.md").read_text().count(".rs::") >= 10, "the walkthrough cites its code by file and item"


def test_a_renamed_item_fails():
    text = "See `crates/switchv2p/src/cache.rs::MappingCache` and crates/switchv2p/src/cache.rs::DirectMapped::no_such_fn.\n"
    assert missing_items(text) == ["1: crates/switchv2p/src/cache.rs::DirectMapped::no_such_fn"]
