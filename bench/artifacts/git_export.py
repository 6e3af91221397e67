#!/usr/bin/env python3
"""Write one commit's tree of a git repository into a directory, as `git archive | tar -x` does,
but tolerating blobs the copy lacks (a partial or size-limited mirror): those files are skipped
and listed on stderr, so the caller can tell whether anything it needs is missing.

    git_export.py REPO REV DEST

Exit 0 when every file was written, 3 when some were missing (DEST is still usable for parts
that do not need them), 2 on a bad argument.
"""
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(f"usage: {argv[0]} REPO REV DEST", file=sys.stderr)
        return 2
    repo, rev, dest = argv[1:]
    try:
        listing = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "-z", "--full-tree", rev],
                                 check=True, capture_output=True).stdout
    except subprocess.CalledProcessError as e:
        print(f"git_export: cannot list {rev} in {repo}: {e.stderr.decode().strip()}", file=sys.stderr)
        return 2
    entries = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode.decode(), sha.decode(), path.decode()))
    cat = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    missing = []
    for mode, sha, path in entries:
        cat.stdin.write(sha.encode() + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            missing.append(path)
            continue
        data = cat.stdout.read(int(header[2]))
        cat.stdout.read(1)  # the newline after each object
        out = os.path.join(dest, path)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if mode == "120000":
            if os.path.lexists(out):
                os.unlink(out)
            os.symlink(data.decode(), out)
            continue
        with open(out, "wb") as f:
            f.write(data)
        if mode == "100755":
            os.chmod(out, 0o755)
    cat.stdin.close()
    cat.wait()
    for path in missing:
        print(f"git_export: not in this copy: {path}", file=sys.stderr)
    return 3 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
