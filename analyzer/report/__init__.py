"""`analyzer report OUT_DIR`: what a researcher would publish from an `analyzer scan` output.

  collect.py   one source at a time, lazily (polars): additive counts (never whole tables)
  cube.py      summary_cube, the tidy long table every summary and figure is drawn from
  model.py     measures per population with 95 % Wilson intervals, edition classes (editions
               that agree game by game are one series), the edition-pair matrix, the draughts
               rules; periods.py the period series and the time-control mix; audit.py the
               audit of recorded results; styles.py one look per series
  figures.py   matplotlib figures (figkit, fig_grids, fig_trends), wide for print and screens,
               narrow for phones: SVG in the page, SVG + PDF + CSV files
  page.py      the HTML page from a Jinja2 template (templates/report.html.j2)
  files.py     tables and figure data as CSV (cells neutralised for spreadsheets) and Parquet
  show.py      one game's rule timeline (`analyzer show`), and the pages of the example games

Writes under the report directory (default OUT_DIR/report): index.html, every table as
NAME.parquet and NAME.csv, figures/NAME.{svg,pdf,csv} (and NAME.narrow.svg), games/*.html.
docs/report.md describes them.
"""

from __future__ import annotations

import os

import polars as pl

from analyzer.report import figures as _figures, files, model, page, show, stats  # noqa: F401  (re-exported modules)
from analyzer.report.model import Report, build


def build_tables(out_dir: str) -> dict[str, pl.DataFrame | None]:
    """Every summary table of the report, as polars DataFrames ("edition_pairs" is None when no
    edition pairs were collected)."""
    return build(out_dir).tables


def build_figures(out_dir_or_report, layouts=(_figures.WIDE,)) -> list[_figures.Figure]:
    """The report's matplotlib figures (for checks and for reuse), in the layouts given
    (figures.WIDE for print, figures.NARROW for phones)."""
    rep = out_dir_or_report if isinstance(out_dir_or_report, Report) else build(out_dir_or_report)
    return _figures.build_figures(rep, tuple(layouts))


def _draw(jobs, fig_dir: str) -> None:
    """Lay out and save the figures of `jobs` ((index, Figure) pairs). Matplotlib only: this
    runs in a forked child too, where polars must not be used (its thread pool is not forked)."""
    import matplotlib.pyplot as plt

    for _, f in jobs:
        _figures.freeze_layout(f.fig)
        _figures.save(f, fig_dir)
        plt.close(f.fig)


def _draw_all(rep: Report, fig_dir: str) -> list[dict]:
    """Build every figure here (polars), then lay out and save them in this process and a forked
    child, about half each (2 cores: about half the time). Returns per figure name its title,
    caption, files and the inline SVG of each layout."""
    import matplotlib.pyplot as plt

    planned = [(cost, b()) for cost, b in _figures.figure_plan(rep)]
    figs = [(cost, f) for cost, f in planned if f is not None]
    for _, f in figs:
        if f.layout is _figures.WIDE:
            files.write_csv(f.data, os.path.join(fig_dir, f.name + ".csv"))
    order = sorted(range(len(figs)), key=lambda i: -figs[i][0])
    mine: list[tuple[int, _figures.Figure]] = []
    theirs: list[tuple[int, _figures.Figure]] = []
    load = [0.0, 0.0]
    for i in order:  # greedy: the larger figures first, each to the less loaded side
        side = 0 if load[0] <= load[1] else 1
        (mine if side == 0 else theirs).append((i, figs[i][1]))
        load[side] += figs[i][0]
    pid = None
    if hasattr(os, "fork") and theirs:
        import warnings

        with warnings.catch_warnings():  # 3.12+: "fork() of a multi-threaded process" (polars' idle
            warnings.simplefilter("ignore", DeprecationWarning)  # pool); the child uses matplotlib only
            pid = os.fork()
        if pid == 0:  # child: its share, then exit without cleanup
            code = 0
            try:
                _draw(theirs, fig_dir)
            except BaseException:  # noqa: BLE001 - the forked child must reach os._exit, with a code
                code = 1
            os._exit(code)
        for _, f in theirs:
            plt.close(f.fig)
    else:
        mine, theirs = mine + theirs, []
    try:
        _draw(mine, fig_dir)
    finally:
        if pid is not None:
            _, status = os.waitpid(pid, 0)
            if status != 0:
                raise RuntimeError("drawing the report's figures failed in the child process")
    done: dict[str, dict] = {}
    for _, f in figs:
        with open(os.path.join(fig_dir, _figures.stem(f) + ".svg"), encoding="utf-8") as fh:
            svg = fh.read().split("\n", 1)[1]
        entry = done.setdefault(
            f.name,
            {
                "name": f.name,
                "title": f.title,
                "caption": f.caption,
                "svg_file": f.name + ".svg",
                "pdf_file": f.name + ".pdf",
                "csv_file": f.name + ".csv",
                "source": f.source,
            },
        )
        entry[f.layout.name] = svg
    for entry in done.values():  # a layout that drew nothing shows nothing
        entry.setdefault("wide", "")
        entry.setdefault("narrow", "")
    return list(done.values())


def write_report(
    out,
    report_dir: str | None = None,
    partial: bool = False,
    check: str = "digest",
    exclude_data_issues: bool = False,
) -> str:
    """Write the tables, figures and index.html under report_dir (default OUT/report, or
    ./report when OUT is a URL); returns the path of index.html. `out`: a Dataset
    (engine.dataset) or the folder or URL of one. `partial`: include what unfinished sources
    hold (the page says so; the CLI refuses such an OUT without it). `check`: how each table
    file is checked before it is read ("digest", its SHA-256, by default).
    `exclude_data_issues`: leave out the games of the Lichess database's known data issues that
    change the measures (io.lichess_db; docs/lichess-data-issues.md); the coverage counts them."""
    from analyzer.engine.dataset import Dataset
    from analyzer.io.lichess_db import MEASURE_ISSUES

    ds = out if isinstance(out, Dataset) else Dataset(out)
    out_dir = ds.root
    if not ds.remote and not os.path.isdir(out_dir):
        raise FileNotFoundError(f"{out_dir}: not a directory")
    # The report is written on local disk; for tables on an object store, ./report by default.
    report_dir = report_dir or ("report" if ds.remote else os.path.join(out_dir, "report"))
    fig_dir = os.path.join(report_dir, "figures")
    os.makedirs(fig_dir, exist_ok=True)
    rep = build(ds, partial=partial, check=check, exclude=MEASURE_ISSUES if exclude_data_issues else ())
    done = _draw_all(rep, fig_dir)
    written = []
    for name, df in rep.tables.items():
        if df is None:
            continue
        if rep.partial:  # a report of an unfinished run: every table says so, row by row
            df = df.with_columns(pl.lit(True).alias("partial"))
        files.write_table(df, report_dir, name)
        written.append({"name": name, "csv": name + ".csv", "parquet": name + ".parquet", "rows": f"{df.height:,}"})
    games = show.write_example_pages(ds, rep, os.path.join(report_dir, "games"))
    html = page.render(rep, out_dir, done, written, games)
    path = os.path.join(report_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(html)
    os.replace(tmp, path)
    return path
