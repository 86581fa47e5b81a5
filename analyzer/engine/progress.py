"""Progress of a scan, driven by a timer (never duplicated, also while a long unit runs):
a live bar on a terminal (tqdm), plain timestamped log lines otherwise (`logging`, logger
"analyzer"), or nothing. Work reused from an earlier run is counted apart: rates and the ETA
are about this run's work only."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

log = logging.getLogger("analyzer")


def _width(stream) -> dict:
    """Follow the terminal's size; a terminal that reports none (a bare pseudo-terminal: 0 x 0)
    gets 100 x 24 (tqdm hides a bar below the last row, and a 0-row screen has none)."""
    try:
        size = os.get_terminal_size((stream or sys.stderr).fileno())
        if size.columns > 0 and size.lines > 0:
            return {"dynamic_ncols": True}
    except (OSError, ValueError, AttributeError):
        pass
    return {"ncols": 100, "nrows": 24}


def _eta(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """mode: "bar" (a terminal), "log" (lines every `interval` seconds) or "none"."""

    def __init__(self, mode: str = "log", interval: float = 10.0, total_bytes: int | None = None, stream=None):
        self.mode = mode if interval > 0 or mode == "bar" else "none"
        self.interval = interval
        self.total_bytes = total_bytes  # compressed input bytes of the sources to analyze (None: unknown)
        self.stream = stream
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.games = 0  # analyzed by this run
        self.text_bytes = 0
        self.input_bytes = 0  # compressed bytes analyzed by this run
        self.units_done = 0
        self.units_planned = 0
        self.reused_units = 0
        self.reused_games = 0
        self.reused_bytes = 0
        self.skipped_sources = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_line: str | None = None
        self._bar = None  # a tqdm bar in mode "bar" (tqdm has no type information: Any)
        if self.mode == "bar":
            from tqdm import tqdm

            # No tqdm monitor thread: the bar is refreshed by our timer, which pause() stops
            # so that the forked engine may fork (a process with other threads may not).
            tqdm.monitor_interval = 0

            self._bar = tqdm(
                total=total_bytes,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                file=stream,
                leave=True,
                smoothing=0.1,
                **_width(stream),
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} {rate_fmt} ETA {remaining}{postfix}",
            )
        self._start_ticker()

    def _start_ticker(self) -> None:
        if self.mode != "none":
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._tick, name="analyzer-progress", daemon=True)
            self._thread.start()

    def pause(self) -> None:
        """Stop the timer thread (its state stays): a process may only fork with no other
        thread running (engine.forked); resume() starts it again."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def resume(self) -> None:
        if self._thread is None:
            self._start_ticker()

    def thread_count(self) -> int:
        """Threads of this object that pause() stops (0 or 1)."""
        return 1 if self._thread is not None and self._thread.is_alive() else 0

    # -- events ------------------------------------------------------------------------------

    def source_skipped(self) -> None:
        """A source complete in OUT: not in the total of bytes to read, only counted."""
        with self.lock:
            self.skipped_sources += 1

    def unit_planned(self, spec) -> None:
        with self.lock:
            self.units_planned += 1

    def unit_reused(self, rec: dict) -> None:
        with self.lock:
            self.reused_units += 1
            self.reused_games += rec.get("games", 0)
            self.reused_bytes += rec.get("input_bytes") or 0
        self._bar_update(rec.get("input_bytes") or 0)

    def unit_done(self, rec: dict) -> None:
        with self.lock:
            self.units_done += 1
            self.games += rec["games"]
            self.text_bytes += rec["text_bytes"]
            self.input_bytes += rec.get("input_bytes") or 0
        self._bar_update(rec.get("input_bytes") or 0)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()

    # -- output ------------------------------------------------------------------------------

    def _bar_update(self, n: int) -> None:
        if self._bar is not None:
            with self.lock:
                self._bar.set_postfix_str(self._postfix(), refresh=False)
                self._bar.update(n)

    def _postfix(self) -> str:
        dt = max(time.time() - self.t0, 1e-9)
        text = f"{self.games:,} games {self.games / dt:,.0f}/s"
        if self.reused_units:
            text += f" ({self.reused_games:,} reused)"
        return text

    def _tick(self) -> None:
        period = 0.5 if self.mode == "bar" else self.interval
        while not self._stop.wait(period):
            if self._bar is not None:  # mode "bar"
                with self.lock:
                    self._bar.set_postfix_str(self._postfix(), refresh=False)
                    self._bar.refresh()
            else:
                line = self.line()
                if line != self._last_line:  # nothing new since the last line: no repeat
                    log.info(line)
                    self._last_line = line

    def line(self) -> str:
        """One progress line: what this run did so far, and what it reused."""
        with self.lock:
            dt = max(time.time() - self.t0, 1e-9)
            parts = [
                f"elapsed {_eta(dt)}",
                f"units {self.units_done + self.reused_units}/{self.units_planned}",
                f"games {self.games:,} ({self.games / dt:,.0f}/s)",
                f"text {self.text_bytes / 1e6:,.1f} MB",
            ]
            if self.total_bytes:
                todo = max(self.total_bytes - self.reused_bytes, 1)
                frac = min(self.input_bytes / todo, 1.0)
                rate = self.input_bytes / dt
                eta = (todo - self.input_bytes) / rate if rate > 0 else None
                parts.append(
                    f"{100 * (frac * todo + self.reused_bytes) / self.total_bytes:.0f}% of input, ETA {_eta(eta)}"
                )
            if self.reused_units or self.skipped_sources:
                parts.append(
                    f"reused {self.reused_units} units / {self.reused_games:,} games, "
                    f"{self.skipped_sources} sources skipped as complete"
                )
            return " | ".join(parts)
