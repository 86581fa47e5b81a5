#!/usr/bin/env python3
"""Check that pip resolves an extra of this project without backtracking (issue 30).

    python .ci/check_resolution.py                   # the test extra: .[test]
    python .ci/check_resolution.py test,test-cloud   # with the object-storage tests' stack (CI)
    python .ci/check_resolution.py report            # another extra

Runs `pip install --dry-run --ignore-installed --report` on the project (as on a machine with
nothing installed: what the README's install command resolves), and fails when pip's log shows
backtracking: "pip is looking at multiple versions of X" or "This is taking longer than usual",
or several versions of one package fetched. Prints what pip chose, so that bounds in
pyproject.toml can be set from it when they are moved on (a new dependency in an extra, such
as duckdb or pandas, is simply resolved with the rest). Needs the package index; wheels pip has
cached are not fetched again. Exit 0: no backtracking; 1: backtracking (listed); 2: pip failed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

BACKTRACKING = ("is looking at multiple versions of", "This is taking longer than usual")
# "Downloading aiobotocore-3.9.0-py3-none-any.whl (87 kB)", "Using cached s3fs-2026.7.0-...",
# "Processing /opt/wheels/partd-1.4.2-py3-none-any.whl": a distribution file and its version
FETCHED = re.compile(
    r"^\s*(?:Downloading|Using cached|Processing)\s+(?:\S*/)?"
    r"([A-Za-z0-9_.]+?)-(\d[^-\s]*?)(?:\.tar\.gz|\.zip|-py|-cp|-pp)"
)


def fetched_versions(log: str) -> dict[str, set[str]]:
    """Package name (normalised) -> the versions whose files pip fetched while resolving."""
    seen: dict[str, set[str]] = defaultdict(set)
    for line in log.splitlines():
        m = FETCHED.match(line)
        if m:
            seen[re.sub(r"[-_.]+", "-", m.group(1)).lower()].add(m.group(2))
    return seen


def problems(log: str) -> list[str]:
    """What in pip's log shows backtracking (empty: none)."""
    out = [line.strip() for line in log.splitlines() if any(b in line for b in BACKTRACKING)]
    out += [
        f"{name}: {len(v)} versions fetched ({', '.join(sorted(v))})"
        for name, v in sorted(fetched_versions(log).items())
        if len(v) > 1
    ]
    return out


def main(argv: list[str]) -> int:
    extra = argv[0] if argv else "test"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--report",
            report,
            "-e",
            f"{root}[{extra}]",
        ]
        print("$", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, check=False, capture_output=True, text=True)
        log = r.stdout + r.stderr
        if r.returncode != 0:
            print(log[-5000:])
            print(f"error: pip failed (exit {r.returncode})", file=sys.stderr)
            return 2
        with open(report) as fh:
            chosen = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.load(fh)["install"]}
    pins = ", ".join(f"{k}=={v}" for k, v in sorted(chosen.items(), key=lambda x: x[0].lower()))
    print(f"{len(chosen)} packages:", pins)
    found = problems(log)
    if found:
        print(f"error: pip backtracked resolving .[{extra}]:", *found, sep="\n  ", file=sys.stderr)
        return 1
    print(f"ok: .[{extra}] resolved without backtracking")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
