"""The same work units on a Dask cluster give the same tables as a local run."""

from __future__ import annotations

import pytest

from analyzer import engine
from analyzer.kinds import resolve_editions as resolve
from conftest import out_tables as _tables


def test_dask_local_cluster_equals_local_run(tmp_path, small_path):
    pytest.importorskip("dask.distributed", reason="optional extra draw-rule-analyzer[dask]")
    with open(small_path, "rb") as fh:
        text = fh.read()
    src = tmp_path / "games.pgn"
    src.write_bytes(text[: text.index(b"[Event ", 1_500_000)])
    n_games = src.read_bytes().count(b"[Event ")  # (the tables compared below hold them all)
    eds = resolve(["fide_2018", "lichess"])
    local_cfg = engine.Config(out=str(tmp_path / "local"), editions=eds, unit_text_bytes=400_000)
    s1, c1 = engine.run_scan([str(src)], local_cfg, workers=1, progress_interval=0)
    dask_cfg = engine.Config(out=str(tmp_path / "dask"), editions=eds, unit_text_bytes=400_000)
    s2, c2 = engine.run_scan([str(src)], dask_cfg, workers=2, engine="dask", progress_interval=0)
    assert c1 == c2 == 0
    assert s2["engine"] == "dask" and s2["units"] == s1["units"] > 1
    g1, v1, e1 = _tables(tmp_path / "local")
    g2, v2, e2 = _tables(tmp_path / "dask")
    assert g1.height == s1["games"] == n_games > 0 and v1.height == s1["games"] * 2
    assert g1.equals(g2) and v1.equals(v2) and e1.equals(e2)


def test_dask_graph_carries_no_text(tmp_path, small_path):
    """Units go to a Dask cluster as descriptions: an uncompressed input as byte ranges (the
    worker reads them), a single-frame zstd input's text scattered to a worker, not in the
    graph. The commit before issue 19 warned 'Sending large graph of size 16.00 MiB' here."""
    pytest.importorskip("dask.distributed", reason="optional extra draw-rule-analyzer[dask]")
    import warnings

    import zstandard

    with open(small_path, "rb") as fh:
        text = fh.read()
    plain = tmp_path / "plain.pgn"
    plain.write_bytes(text * 4)  # 21.8 MB: two 16 MiB units
    packed = tmp_path / "packed.pgn.zst"
    packed.write_bytes(zstandard.ZstdCompressor(level=1).compress(text * 4))
    eds = resolve(["fide_2018"])
    s1, c1 = engine.run_scan(
        [str(plain), str(packed)],
        engine.Config(out=str(tmp_path / "local"), editions=eds),
        workers=1,
        progress_interval=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s2, c2 = engine.run_scan(
            [str(plain), str(packed)],
            engine.Config(out=str(tmp_path / "dask"), editions=eds),
            workers=2,
            engine="dask",
            progress_interval=0,
        )
    assert c1 == c2 == 0 and s1["units"] == s2["units"] >= 4
    assert not [w for w in caught if "large graph" in str(w.message)], [str(w.message)[:60] for w in caught]
    g1, v1, e1 = _tables(tmp_path / "local")
    g2, v2, e2 = _tables(tmp_path / "dask")
    assert g1.height == 8 * 2000 and g1.equals(g2) and v1.equals(v2) and e1.equals(e2)
