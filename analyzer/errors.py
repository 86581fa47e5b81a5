"""The errors a user of the analyzer meets, under one base.

Each is a message for a person (the command line prints it as one line and exits with
`exit_code`, never with a traceback); catching `AnalyzerError` catches every one of them and
nothing else. They are raised for conditions of the input, the output folder or the run, never
for a bug: code that handles them does not also swallow a `ValueError` or an `OSError` that a
mistake in the analyzer raised. Where an error is also a builtin kind of error, it subclasses
that builtin too (as python-chess's errors do), so that generic code keeps working.
"""

from __future__ import annotations


class AnalyzerError(Exception):
    """Base of the analyzer's errors: a message for the user."""

    exit_code = 2


class InputError(AnalyzerError):
    """An input that cannot be read (missing, unreadable, of a kind nothing here reads)."""


class MissingExtra(AnalyzerError, ImportError):
    """A feature needs an optional dependency that is not installed (the message names the extra)."""


class RunError(AnalyzerError):
    """A problem with the run as a whole (an unwritable output, an unreachable scheduler, ...)."""


class LockHeld(RunError):
    """OUT is in use by another run."""


class DatasetError(AnalyzerError):
    """OUT's tables cannot be served as they are (damaged, missing, partial, foreign or unsafe):
    the message names the file and says how to repair it. `path`: the file or folder (relative
    to OUT) where the problem was found, when there is one."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class DamagedRecord(DatasetError):
    """A record of OUT's manifest does not parse, or its checksum does not match its content."""


class UnsafePath(DatasetError):
    """Something that is not the analyzer's own stands where OUT's own folder or file belongs
    (a symbolic link, a device, a folder in place of a file): the analyzer never writes or
    reads through it."""


class GameNotFound(AnalyzerError, LookupError):
    """A game asked for by key (`analyzer show`) that OUT does not hold."""


__all__ = [
    "AnalyzerError",
    "DamagedRecord",
    "DatasetError",
    "GameNotFound",
    "InputError",
    "LockHeld",
    "MissingExtra",
    "RunError",
    "UnsafePath",
]
