"""The report's tables as files: Parquet as computed, and CSV for spreadsheets, where a text cell
that starts with `=`, `+`, `-`, `@`, a tab or a carriage return would be read as a formula (CSV
injection: player names, events and sites come from the input's tags) and so gets a leading
apostrophe, as OWASP advises. Lists (example games) are joined by spaces in the CSV."""

from __future__ import annotations

import os

import polars as pl

FORMULA_START = r"^[=+\-@\t\r]"


def neutralised(df: pl.DataFrame) -> pl.DataFrame:
    """Every text cell a spreadsheet would run as a formula, prefixed with an apostrophe; lists
    joined by spaces first."""
    lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
    if lists:
        df = df.with_columns(pl.col(c).list.join(" ") for c in lists)
    text = [c for c, t in df.schema.items() if t == pl.String]
    if not text:
        return df
    return df.with_columns(
        pl.when(pl.col(c).str.contains(FORMULA_START)).then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
        for c in text
    )


def write_csv(df: pl.DataFrame, path: str) -> None:
    neutralised(df).write_csv(path)


def write_table(df: pl.DataFrame, report_dir: str, name: str) -> None:
    """NAME.parquet (values as they are) and NAME.csv (neutralised) under report_dir."""
    df.write_parquet(os.path.join(report_dir, name + ".parquet"))
    write_csv(df, os.path.join(report_dir, name + ".csv"))
