"""PGN/PDN text kernels: cut a block into games, find tag values, gather strings for Arrow.

A game starts at the first tag line `[Name "..."]` after movetext (or at the start), or, for a
game without tags, at the first movetext after the previous game's termination marker
(`1-0`, `0-1`, `1/2-1/2`, `*`, and for draughts `2-0`, `0-2`, `1-1`). A tag-shaped line always
starts a new game once the current one has movetext, even inside an unterminated comment, so
one damaged game cannot swallow the games after it; a tag line after a blank line ends a game
that has only tags. Spans partition the text: each game runs
to the start of the next.
"""
from __future__ import annotations

import analyzer._numba_env  # noqa: F401

from numba import njit

# No numba runtime: these kernels never allocate, and without it calls between them pass
# arrays without atomic reference counting (see analyzer.chess._board.HOT).
JIT = dict(cache=True, nogil=True, _nrt=False)

_BETWEEN = 0
_TAGS = 1
_MOVETEXT = 2


@njit(inline="always", **JIT)
def _nl(c):
    return c == 10 or c == 13


@njit(inline="always", **JIT)
def _blank(c):
    return c == 32 or c == 9 or c == 11 or c == 12


@njit(**JIT)
def _skip_line_space(buf, i, n):
    """Skip spaces, tabs and UTF-8 BOMs at a line start."""
    while i < n:
        c = buf[i]
        if _blank(c):
            i += 1
        elif c == 0xEF and i + 2 < n and buf[i + 1] == 0xBB and buf[i + 2] == 0xBF:
            i += 3
        else:
            break
    return i


@njit(**JIT)
def _is_tag_line(buf, i, n):
    """buf[i] == '[' followed by a tag name, whitespace and a quote."""
    if i >= n or buf[i] != 91:
        return False
    j = i + 1
    k = j
    while k < n:
        c = buf[k]
        if (65 <= c <= 90) or (97 <= c <= 122) or (48 <= c <= 57) or c == 95 or c == 45:
            k += 1
        else:
            break
    if k == j:
        return False
    while k < n and _blank(buf[k]):
        k += 1
    return k < n and buf[k] == 34


@njit(**JIT)
def _line_end(buf, i, n):
    while i < n and not _nl(buf[i]):
        i += 1
    return i


@njit(**JIT)
def _next_line(buf, i, n):
    """Index after the line break at i (\\n, \\r\\n or lone \\r)."""
    if i < n and buf[i] == 13:
        i += 1
        if i < n and buf[i] == 10:
            i += 1
    elif i < n:
        i += 1
    return i


@njit(**JIT)
def _is_result(buf, a, b, draughts):
    n = b - a
    if n == 1:
        return buf[a] == 42  # '*'
    if n == 3 and buf[a + 1] == 45:
        x = buf[a]
        y = buf[a + 2]
        if (x == 49 and y == 48) or (x == 48 and y == 49):
            return True
        if draughts and ((x == 50 and y == 48) or (x == 48 and y == 50) or (x == 49 and y == 49)):
            return True
        return False
    if n == 7:
        return (buf[a] == 49 and buf[a + 1] == 47 and buf[a + 2] == 50 and buf[a + 3] == 45
                and buf[a + 4] == 49 and buf[a + 5] == 47 and buf[a + 6] == 50)
    return False


@njit(**JIT)
def find_games(buf, n, final, draughts, starts):
    """Write game start offsets into `starts`; return (n_complete, consumed).

    Games whose end is not yet known (the last one, unless `final`) are not counted; `consumed`
    is where the next call must start. `starts` must hold n // 2 + 2 entries.
    """
    state = _BETWEEN
    comment = False
    depth = 0
    ng = 0
    i = 0
    blank_before = False   # the previous line was blank (a tag line after it is a strong start)
    while i < n:
        # At a line start.
        ls = i
        fi = _skip_line_space(buf, i, n)
        if fi >= n:
            break
        c = buf[fi]
        if _nl(c):
            i = _next_line(buf, fi, n)
            blank_before = True
            continue
        after_blank = blank_before
        blank_before = False
        if c == 91 and _is_tag_line(buf, fi, n):
            # A tag line after a blank line also ends a game that has tags but no movetext
            # (the "strong start" where work units are cut), so it is not merged into the next.
            if state != _TAGS or after_blank:
                starts[ng] = ls
                ng += 1
                state = _TAGS
                comment = False
                depth = 0
            i = _next_line(buf, _line_end(buf, fi, n), n)
            continue
        if comment:
            # Continuation of a multi-line comment.
            j = fi
            while j < n and not _nl(buf[j]) and buf[j] != 125:
                j += 1
            if j < n and buf[j] == 125:
                comment = False
                i = j + 1
                # Rest of the line is movetext: fall through by re-scanning from here.
            else:
                i = _next_line(buf, _line_end(buf, j, n), n)
                continue
        elif c == 37 or (state != _MOVETEXT and c == 59):
            # '%' escape line, or a ';' comment line outside movetext: belongs to the current game.
            i = _next_line(buf, _line_end(buf, fi, n), n)
            continue
        else:
            if state == _BETWEEN:
                starts[ng] = ls
                ng += 1
            state = _MOVETEXT
            i = fi
        # Scan movetext to the end of the line.
        while i < n and not _nl(buf[i]):
            c = buf[i]
            if _blank(c):
                i += 1
                continue
            if comment:
                if c == 125:
                    comment = False
                i += 1
                continue
            if c == 123:
                # Skip the comment body in a tight loop (most of a Lichess line is comments).
                j = i + 1
                while j < n and buf[j] != 125 and buf[j] != 10 and buf[j] != 13:
                    j += 1
                if j < n and buf[j] == 125:
                    i = j + 1
                else:
                    comment = True
                    i = j
                continue
            if c == 59:
                i = _line_end(buf, i, n)
                break
            if c == 40:
                depth += 1
                i += 1
                continue
            if c == 41:
                if depth > 0:
                    depth -= 1
                i += 1
                continue
            if state == _BETWEEN:
                # Movetext after a termination marker: a game without tags.
                starts[ng] = i
                ng += 1
                state = _MOVETEXT
            j = i
            while j < n and not _nl(buf[j]) and not _blank(buf[j]) and buf[j] != 123 and buf[j] != 40 and buf[j] != 41 and buf[j] != 59:
                j += 1
            if depth == 0 and _is_result(buf, i, j, draughts):
                state = _BETWEEN
            i = j
        i = _next_line(buf, i, n)
    if final:
        return ng, n
    if ng == 0:
        return 0, 0
    return ng - 1, starts[ng - 1]


@njit(**JIT)
def parse_tags(buf, starts, ends, names, name_off, val_s, val_e, esc, mt_start):
    """Find tag values of the wanted tag names in each game [starts[g], ends[g]).

    names/name_off hold the wanted names back to back. Writes value byte ranges (val_s = -1 when
    absent; the last occurrence wins, as in python-chess), an 'has escapes' flag and the start of
    the movetext (first line that is not a tag, '%' or ';' line).
    """
    n_games = len(starts)
    n_names = len(name_off) - 1
    for g in range(n_games):
        for t in range(n_names):
            val_s[g, t] = -1
            val_e[g, t] = -1
            esc[g, t] = False
        i = starts[g]
        e = ends[g]
        mt = e
        while i < e:
            fi = _skip_line_space(buf, i, e)
            if fi >= e:
                i = e
                break
            c = buf[fi]
            if _nl(c):
                i = _next_line(buf, fi, e)
                continue
            if c == 37 or c == 59:
                i = _next_line(buf, _line_end(buf, fi, e), e)
                continue
            if c != 91 or not _is_tag_line(buf, fi, e):
                mt = i
                break
            le = _line_end(buf, fi, e)
            # One or more [Name "value"] on this line.
            k = fi
            while k < le:
                if buf[k] != 91:
                    k += 1
                    continue
                ns = k + 1
                ne = ns
                while ne < le and not _blank(buf[ne]) and buf[ne] != 34:
                    ne += 1
                q = ne
                while q < le and _blank(buf[q]):
                    q += 1
                if q >= le or buf[q] != 34:
                    k = q + 1
                    continue
                vs = q + 1
                v = vs
                has_esc = False
                while v < le and buf[v] != 34:
                    if buf[v] == 92 and v + 1 < le:
                        has_esc = True
                        v += 2
                    else:
                        v += 1
                ve = min(v, le)
                for t in range(n_names):
                    a = name_off[t]
                    b = name_off[t + 1]
                    if b - a != ne - ns:
                        continue
                    same = True
                    for x in range(b - a):
                        if names[a + x] != buf[ns + x]:
                            same = False
                            break
                    if same:
                        val_s[g, t] = vs
                        val_e[g, t] = ve
                        esc[g, t] = has_esc
                        break
                k = ve + 1
            i = _next_line(buf, le, e)
        if i >= e:
            mt = e
        mt_start[g] = mt


@njit(**JIT)
def gather_strings(buf, vs, ve, esc, offsets, data):
    """Copy value bytes into one Arrow data buffer (unescaping \\" and \\\\); offsets int32 n+1."""
    p = 0
    n = len(vs)
    for g in range(n):
        offsets[g] = p
        a = vs[g]
        if a < 0:
            continue
        b = ve[g]
        if esc[g]:
            k = a
            while k < b:
                c = buf[k]
                if c == 92 and k + 1 < b:
                    k += 1
                    c = buf[k]
                data[p] = c
                p += 1
                k += 1
        else:
            for k in range(a, b):
                data[p] = buf[k]
                p += 1
    offsets[n] = p
    return p


@njit(**JIT)
def parse_int_values(buf, vs, ve, out, valid):
    """Parse decimal integers (e.g. Elo); invalid or absent -> valid False."""
    for g in range(len(vs)):
        a = vs[g]
        b = ve[g]
        out[g] = 0
        valid[g] = False
        if a < 0 or b <= a or b - a > 9:
            continue
        v = 0
        ok = True
        for k in range(a, b):
            c = buf[k]
            if 48 <= c <= 57:
                v = v * 10 + (c - 48)
            else:
                ok = False
                break
        if ok:
            out[g] = v
            valid[g] = True
