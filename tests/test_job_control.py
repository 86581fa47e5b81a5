"""The batch job under a scheduler (issue 27): SIGTERM and SIGHUP stop it like Ctrl-C (one
line on stderr, no temporary file or worker left, exit 143 / 129, resumable), and a pzstd input
with several workers runs in forked workers under every progress mode (the cron run is the
fast run)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from conftest import alive, live_children, out_tables, pty_run, pzstd_file, same_tables

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals, fork and /proc: Linux")


def _cmd(src, out, *extra):
    return [
        sys.executable,
        "-m",
        "analyzer",
        "scan",
        str(src),
        "--out",
        str(out),
        "--workers",
        "2",
        "--frames-per-unit",
        "1",
        "--json",
        *extra,
    ]


@pytest.fixture(scope="module")
def big(tmp_path_factory, small_text):
    """lichess_small x6 as 2 MiB pzstd frames (~16 units), and a clean run's tables."""
    d = tmp_path_factory.mktemp("jc")
    src = pzstd_file(d, small_text * 6, name="g")
    r = subprocess.run(_cmd(src, d / "ref", "--progress", "none"), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return src, out_tables(d / "ref")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_like_ctrl_c(tmp_path, big, sig, code):
    src, ref = big
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _cmd(src, out, "--progress", "none"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    mdir = out / "_manifest" / "g"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(mdir.glob("unit-*.json"))) < 3:
        time.sleep(0.02)
    assert not (mdir / "source.json").exists(), "the run finished before the signal"
    workers = live_children(proc.pid)
    assert len(workers) == 2, "the scan did not run in two forked workers"
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert lines == [f"analyzer: stopped by {signal.Signals(sig).name}; rerun the same command to resume"], stderr
    assert stdout == ""
    time.sleep(0.2)
    assert not [p for p in workers if alive(p)], "a worker outlived the run"
    assert not list(out.rglob(".analyzer-tmp-*")), "temporary files left"
    r = subprocess.run(_cmd(src, out, "--progress", "none"), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["games_reused"] > 0  # resumed, not started over
    same_tables(ref, out_tables(out))


@pytest.mark.parametrize("mode", ["log", "none", "bar"])
def test_pzstd_runs_in_forked_workers_under_every_progress_mode(tmp_path, big, mode):
    """Issue 27.7: with progress log lines (the default under cron) the forked engine was never
    used: its check wanted a single thread, and the progress timer is one."""
    src, ref = big
    out = tmp_path / "out"
    args = _cmd(src, out, "--progress", mode, "--progress-interval", "0.05")
    if mode == "bar":
        code, text = pty_run(args, 300)
        summary = json.loads(next(ln for ln in text.splitlines() if ln.startswith("{")))
        assert "%|" in text
    else:
        r = subprocess.run(args, capture_output=True, text=True, timeout=600)
        code, summary = r.returncode, json.loads(r.stdout)
        if mode == "log":
            assert "elapsed" in r.stderr
    assert code == 0
    assert summary["engine_by_source"] == {"g": "forked"}, summary["engine_by_source"]
    same_tables(ref, out_tables(out))
