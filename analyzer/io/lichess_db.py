"""The Lichess open database (database.lichess.org) as a publisher: its monthly dump files'
names, and the known data issues it lists beside them.

A dump is `<folder>/lichess_db_<variant>_rated_YYYY-MM.pgn.zst` (folders `standard`,
`antichess`, `atomic`, `chess960`, `crazyhouse`, `horde`, `kingOfTheHill`, `racingKings`,
`threeCheck`) or `broadcast/lichess_db_broadcast_YYYY-MM.pgn.zst`; the Hugging Face mirror of the
standard games (`Lichess/standard-chess-games`) holds a month as `data/year=YYYY/month=MM/`.

KNOWN_ISSUES is the "Known issues" list of the database page, as its template in the
lichess-org/database repository holds it (web/index.html.tpl, last changed by commit 28d89cd042, 2026-03-28), each with
the page's own link. The issues that concern games (their results, moves, ratings, tags) are
carried into the games table (`data_issue`: analyzer.analysis.data_issue_column) for the games
of the months (or the day) they name, so that a study can show those games apart or leave them
out (`analyzer report --exclude-data-issues`). The three that concern only the engine
evaluations (`[%eval]`, which nothing here reads) are listed in docs/lichess-data-issues.md and
not carried. Pure data and regular expressions: importing this module loads nothing else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

PAGE = "https://database.lichess.org/#standard_games"
TEMPLATE = "lichess-org/database:web/index.html.tpl@28d89cd042233f35b4de1c63493e17aecc3a0080"

STANDARD = "standard"
BROADCAST = "broadcast"
VARIANT_FOLDERS = (
    "antichess",
    "atomic",
    "chess960",
    "crazyhouse",
    "horde",
    "kingOfTheHill",
    "racingKings",
    "threeCheck",
)
FOLDERS = (STANDARD, *VARIANT_FOLDERS, BROADCAST)
ALL_GAMES = (STANDARD, *VARIANT_FOLDERS)  # every folder of games played on Lichess (not the broadcasts)


@dataclass(frozen=True)
class DataIssue:
    id: str
    folders: tuple[str, ...]  # the dump folders it concerns
    first: str  # first month ("YYYY-MM"; "" = from the start)
    last: str  # last month
    day: str | None  # a UTCDate ("YYYY.MM.DD"): only that day's games; None: every game of the months
    affects_measures: bool  # changes what the draw-rule tables say (results, moves, ratings, self-play)
    text: str  # the page's words
    link: str  # the page's link for it


KNOWN_ISSUES: tuple[DataIssue, ...] = (
    DataIssue(
        "chess960_invalid_castling_2023_11",
        ("chess960",),
        "2023-11",
        "2023-11",
        None,
        True,
        "November 2023: Some Chess960 rematches were recorded with invalid castling rights in their starting FEN.",
        "https://github.com/lichess-org/database/issues/54",
    ),
    DataIssue(
        "antichess_bullet_ratings_2022_12",
        ("antichess",),
        "2022-12",
        "2022-12",
        None,
        True,
        "December 2022: Some Antichess games were recorded with bullet ratings.",
        "https://github.com/lichess-org/lila/commit/3a742bcbb9504ca471e3c4baf6fe7ab25fc46441",
    ),
    DataIssue(
        "incorrect_results_2021_03_12",
        ALL_GAMES,
        "2021-03",
        "2021-03",
        "2021.03.12",
        True,
        "12th March 2021: Some games have incorrect results due to a database outage in the aftermath of a "
        "datacenter fire.",
        "https://lichess.org/forum/lichess-feedback/fire-in-a-lichess-datacenter",
    ),
    DataIssue(
        "resigned_after_end_2021_02_09",
        ALL_GAMES,
        "2021-02",
        "2021-02",
        "2021.02.09",
        True,
        "9th February 2021: Some games were resigned even after the game ended. In variants, additional moves "
        "could be played after the end of the game.",
        "https://lichess.org/forum/lichess-feedback/bug-with-game-completion-today-between-724-and-804",
    ),
    DataIssue(
        "round_date_tags_missing_to_2020_12",
        ALL_GAMES,
        "",
        "2020-12",
        None,
        False,
        "Up to December 2020: Some exports are missing the redundant (but strictly speaking mandatory) Round tag "
        "(always -), Date tag (see UTCDate & UTCTime instead), and black move numbers after comments. This may "
        "be fixed by a future re-export.",
        "https://github.com/lichess-org/database/issues/31",
    ),
    DataIssue(
        "self_play_2020_06",
        ALL_GAMES,
        "2020-06",
        "2020-06",
        None,
        True,
        "June 2020, all before March 2016: Some players were able to play themselves in rated games.",
        "https://github.com/lichess-org/lila/issues/7031",
    ),
    DataIssue(
        "self_play_before_2016_03",
        ALL_GAMES,
        "",
        "2016-02",
        None,
        True,
        "June 2020, all before March 2016: Some players were able to play themselves in rated games.",
        "https://github.com/lichess-org/lila/issues/7031",
    ),
    DataIssue(
        "illegal_castling_to_2016_08",
        (STANDARD,),
        "",
        "2016-08",
        None,
        True,
        "Up to August 2016: 7 games with illegal castling moves were recorded.",
        "https://github.com/lichess-org/database/issues/23",
    ),
)
BY_ID = {i.id: i for i in KNOWN_ISSUES}
# the issues whose games `analyzer report --exclude-data-issues` leaves out
MEASURE_ISSUES = tuple(i.id for i in KNOWN_ISSUES if i.affects_measures)

# Known issues of the page that concern the engine evaluations only ([%eval] comments, which the
# analyzer does not read): listed here and in the docs, not carried into the tables.
EVALUATION_ISSUES = (
    "December 2020, January 2021: Many variant games have been mistakenly analyzed using standard NNUE, "
    "leading to incorrect evaluations (https://github.com/niklasf/fishnet/issues/147).",
    "July 2020 (especially 31st), August 2020 (up to 16th): Many games, especially variant games, may have "
    "incorrect evaluations in the opening (up to 15 plies) (https://github.com/lichess-org/lila/issues/7086).",
    "December 2016 (up to and especially 9th): Many games may have incorrect evaluations "
    "(https://github.com/lichess-org/database/issues/10).",
    "Before 2016: In some cases, mate may not be forced in the number of moves given by the evaluations "
    "(https://github.com/lichess-org/database/issues/9#issuecomment-373883385).",
)

_DUMP = re.compile(r"lichess_db_(?:([A-Za-z0-9]+)_rated|(broadcast))_(\d{4}-\d{2})\.")
_HIVE = re.compile(r"(?:^|/)year=(\d{4})/month=(\d{1,2})(?:/|$)")


def dump_of(path: str) -> tuple[str, str] | None:
    """(folder, "YYYY-MM") of a Lichess dump by its file name, or of a month of the Hugging Face
    mirror of the standard games by its hive folders (year=YYYY/month=MM); None for anything
    else. The folder is the one the database site keeps it in (`kingOfTheHill`, ...)."""
    text = str(path).replace(os.sep, "/")
    m = _DUMP.search(os.path.basename(text.rstrip("/")) + ".")
    if m:
        name = m.group(2) or m.group(1)
        folder = next((f for f in FOLDERS if f.lower() == name.lower()), None)
        return (folder, m.group(3)) if folder else None
    h = _HIVE.search(text.rstrip("/") + "/")
    if h:
        return STANDARD, f"{h.group(1)}-{int(h.group(2)):02d}"
    return None


def issues_of(folder: str, month: str) -> list[DataIssue]:
    """The known issues of one dump (its folder and month), in KNOWN_ISSUES order."""
    return [i for i in KNOWN_ISSUES if folder in i.folders and (i.first or "0000-00") <= month <= i.last]


def issues_for_path(path: str) -> list[list]:
    """[[issue id, UTCDate or None], ...] of the dump at `path` (empty for other inputs): what a
    scan writes into its games' `data_issue` (analyzer.analysis.data_issue_column)."""
    dump = dump_of(path)
    if dump is None:
        return []
    return [[i.id, i.day] for i in issues_of(*dump)]


def count_tag(folder: str) -> str:
    """The tag whose lines counts.txt counts in a folder's dumps: `Site` for games played on
    Lichess (export-single-variant.sh: grep --count -F '[Site '), `GameURL` for the broadcasts
    (export-broadcast.sh), which have no Site of their own."""
    return "GameURL" if folder == BROADCAST else "Site"
