"""The same work units on a Dask cluster give the same tables as a local run."""
from __future__ import annotations


import pytest

import analyzer
from analyzer import engine
from analyzer.editions import resolve



def _tables(out):
    g = analyzer.scan_games(str(out)).collect().sort(["edition", "game_index"])
    e = analyzer.scan_events(str(out)).collect().sort(["edition", "game_index", "ply", "rule", "kind"])
    return g, e


def test_dask_local_cluster_equals_local_run(tmp_path, small_path):
    pytest.importorskip("dask.distributed", reason="optional extra analyzer[dask]")
    with open(small_path, "rb") as fh:
        text = fh.read()
    src = tmp_path / "games.pgn"
    src.write_bytes(text[: text.index(b"[Event ", 1_500_000)])
    eds = resolve(["fide_2018", "lichess"])
    local_cfg = engine.Config(out=str(tmp_path / "local"), editions=eds, unit_text_bytes=400_000)
    s1, c1 = engine.run_scan([str(src)], local_cfg, workers=1, progress_interval=0)
    dask_cfg = engine.Config(out=str(tmp_path / "dask"), editions=eds, unit_text_bytes=400_000)
    s2, c2 = engine.run_scan([str(src)], dask_cfg, workers=2, engine="dask", progress_interval=0)
    assert c1 == c2 == 0
    assert s2["engine"] == "dask" and s2["units"] == s1["units"] > 1
    g1, e1 = _tables(tmp_path / "local")
    g2, e2 = _tables(tmp_path / "dask")
    assert g1.height == s1["games"] * 2
    assert g1.equals(g2) and e1.equals(e2)
