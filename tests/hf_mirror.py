"""Lichess PGN written in the layout of the Hugging Face mirror of the database
(`Lichess/standard-chess-games`): `data/year=YYYY/month=MM/train-NNNNN-of-NNNNN.parquet`, one row
per game, the columns and types of the mirror (Event, Site, White, Black, Result, WhiteTitle,
BlackTitle strings; WhiteElo, BlackElo, WhiteRatingDiff, BlackRatingDiff int16; UTCDate date32;
UTCTime time32[s]; ECO, Opening, Termination, TimeControl strings; movetext: the game's movetext,
without its tags), months by the games' UTCDate.

Also the PGN of the same games as the mirror holds them (`mirror_pgn`): the mirror's tags only,
in the order the dumps write them (io.hf_parquet.TAG_ORDER), an unknown Elo ("?") left out as
the mirror leaves it null. Used by tests/test_hf_parquet.py and benchmarks/bench_hf_parquet.py.
"""

from __future__ import annotations

import datetime
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq

STRINGS = ("Event", "Site", "White", "Black", "Result", "WhiteTitle", "BlackTitle")
INTS = ("WhiteElo", "BlackElo", "WhiteRatingDiff", "BlackRatingDiff")
MORE_STRINGS = ("ECO", "Opening", "Termination", "TimeControl")
COLUMNS = (*STRINGS, *INTS, "UTCDate", "UTCTime", *MORE_STRINGS, "movetext")
SCHEMA = pa.schema(
    [(c, pa.string()) for c in STRINGS]
    + [(c, pa.int16()) for c in INTS]
    + [("UTCDate", pa.date32()), ("UTCTime", pa.time32("s"))]
    + [(c, pa.string()) for c in MORE_STRINGS]
    + [("movetext", pa.string())]
)
TAG = re.compile(r'^\[(\w+) "(.*)"\]$')
# the dumps' tag order (as io.hf_parquet.TAG_ORDER, written out here: the test's oracle)
DUMP_ORDER = (
    "Event",
    "Site",
    "White",
    "Black",
    "Result",
    "UTCDate",
    "UTCTime",
    "WhiteElo",
    "BlackElo",
    "WhiteRatingDiff",
    "BlackRatingDiff",
    "WhiteTitle",
    "BlackTitle",
    "ECO",
    "Opening",
    "TimeControl",
    "Termination",
)


def split_games(text: str) -> list[tuple[dict, str]]:
    """(tags, movetext) of each game of a Lichess PGN text (tag lines, a blank line, movetext)."""
    out = []
    for g in re.split(r"\n\s*\n(?=\[)", text.strip()):
        head, _, movetext = g.partition("\n\n")
        tags = {}
        for line in head.split("\n"):
            m = TAG.match(line.strip())
            if m:
                tags[m.group(1)] = m.group(2)
        out.append((tags, movetext.strip()))
    return out


def _int(v: str | None) -> int | None:
    return None if v in (None, "?", "") else int(v)


def _row(tags: dict, movetext: str) -> dict:
    row: dict = {c: tags.get(c) for c in (*STRINGS, *MORE_STRINGS)}
    row.update({c: _int(tags.get(c)) for c in INTS})
    d = tags.get("UTCDate")
    row["UTCDate"] = datetime.datetime.strptime(d, "%Y.%m.%d").date() if d else None
    t = tags.get("UTCTime")
    row["UTCTime"] = datetime.time.fromisoformat(t) if t else None
    row["movetext"] = movetext
    return row


def month_of(tags: dict) -> tuple[int, int]:
    y, m, _ = tags["UTCDate"].split(".")
    return int(y), int(m)


def write_mirror(games: list[tuple[dict, str]], root: str, files_per_month: int = 1, row_group: int = 500) -> dict:
    """The games under root/data/year=YYYY/month=MM/ (each month in `files_per_month` files of
    row groups of `row_group` rows), in their order; returns (year, month) -> its games."""
    by_month: dict = {}
    for tags, movetext in games:
        by_month.setdefault(month_of(tags), []).append((tags, movetext))
    for (y, m), month_games in sorted(by_month.items()):
        d = os.path.join(root, "data", f"year={y}", f"month={m:02d}")
        os.makedirs(d, exist_ok=True)
        per = -(-len(month_games) // files_per_month)
        for k in range(files_per_month):
            chunk = month_games[k * per : (k + 1) * per]
            rows = [_row(t, mt) for t, mt in chunk]
            table = pa.Table.from_pylist(rows, schema=SCHEMA)
            name = f"train-{k:05d}-of-{files_per_month:05d}.parquet"
            pq.write_table(table, os.path.join(d, name), row_group_size=row_group, compression="zstd")
    return by_month


def mirror_pgn(games: list[tuple[dict, str]]) -> str:
    """The same games as PGN with the mirror's tags only, in the dumps' order."""
    keep = set(COLUMNS) - {"movetext"}
    out = []
    for tags, movetext in games:
        for k in DUMP_ORDER:
            if k in keep and tags.get(k) not in (None, "") and not (k.endswith("Elo") and tags[k] == "?"):
                out.append(f'[{k} "{tags[k]}"]\n')
        out.append(f"\n{movetext}\n\n")
    return "".join(out)
