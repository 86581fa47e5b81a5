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

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

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


# find_games reads most of the text a 64-byte window at a time: `_mask` gives one bit per byte
# of the window that is in a small set (one vector load, a compare per set member), so the
# kernel jumps from one byte that matters to the next. A scalar loop on the byte classes in
# _CLS does the last < 64 bytes of the buffer.
_W = 64
_NL_CHARS = (10, 13)                    # \n \r
_COMMENT_END_CHARS = (125, 10, 13)      # } \n \r: end a comment body on its line
# Inside a game the movetext loop only needs line ends, { ( ) ; and the bytes that single out a
# termination marker: '*', and the '-' of 1-0 0-1 1/2-1/2 (draughts also 2-0 0-2 1-1).
# Moves, move numbers and the blanks between them are passed over a window at a time.
_STOP_CHARS = (10, 13, 123, 40, 41, 59, 45, 42)   # \n \r { ( ) ; - *
_NAME_CHARS = ((48, 57), (65, 90), (97, 122), 95, 45)   # tag names: 0-9 A-Z a-z _ -

# Bits of _CLS.
_SEP = 1            # a token starts after it: blank, ( )
_TOK_END = 2        # ends a token: line end, blank, { ( ) ;
_COMMENT_END = 4    # _COMMENT_END_CHARS
_STOP = 8           # _STOP_CHARS


def _byte_classes():
    t = np.zeros(256, np.uint8)
    for c in b" \t\v\f()":
        t[c] |= _SEP
    for c in b"\n\r \t\v\f{();":
        t[c] |= _TOK_END
    for c in _COMMENT_END_CHARS:
        t[c] |= _COMMENT_END
    for c in _STOP_CHARS:
        t[c] |= _STOP
    return t


_CLS = _byte_classes()


@intrinsic
def _mask(typingctx, buf, i, chars):
    """uint64 with bit k set when buf[i + k] (k < _W) is in `chars`.

    `chars` is a constant tuple of byte values and (lo, hi) ranges. buf: C-contiguous uint8;
    the caller makes sure that 0 <= i and i + _W <= n <= len(buf).
    """
    if not (isinstance(buf, types.Array) and buf.layout == "C" and buf.dtype == types.uint8
            and isinstance(chars, types.BaseTuple)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        vty = ir.VectorType(ir.IntType(8), _W)
        v = builder.load(builder.bitcast(builder.gep(data, [args[1]]), vty.as_pointer()), align=1)

        def splat(x):
            x = builder.trunc(x, ir.IntType(8))
            x = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(x, ir.Constant(vty, ir.Undefined),
                                          ir.Constant(ir.VectorType(ir.IntType(32), _W), [0] * _W))

        hit = None
        for k, ty in enumerate(signature.args[2].types):
            item = builder.extract_value(args[2], k)
            if isinstance(ty, types.Integer):
                eq = builder.icmp_unsigned("==", v, splat(item))
            else:   # lo <= c <= hi as c - lo <= hi - lo, unsigned
                lo = builder.extract_value(item, 0)
                hi = builder.extract_value(item, 1)
                eq = builder.icmp_unsigned("<=", builder.sub(v, splat(lo)), splat(builder.sub(hi, lo)))
            hit = eq if hit is None else builder.or_(hit, eq)
        return builder.bitcast(hit, ir.IntType(_W))

    return types.uint64(buf, i, chars), codegen


@njit(inline="always", **JIT)
def _first_bit(m, k):
    """Index of the lowest set bit of the window mask m at or above k (0 <= k <= _W), or _W."""
    if k >= _W:
        return _W
    m >>= np.uint64(k)
    if m == 0:
        return _W
    return k + np.int64(trailing_zeros(m))


@njit(inline="always", **JIT)
def _skip_to(buf, i, n, chars, cls):
    """First index >= i of a byte in `chars` (class bit `cls` in _CLS), or n."""
    while i + _W <= n:
        m = _mask(buf, i, chars)
        if m != 0:
            return i + np.int64(trailing_zeros(m))
        i += _W
    while i < n and (_CLS[buf[i]] & cls) == 0:
        i += 1
    return i


@njit(inline="always", **JIT)
def _line_end_w(buf, i, n, w, m):
    """(first line end at or after i, or n; w; m), m being the line-end mask of the window at w.

    The caller keeps (w, m) between calls (start with w = -_W), so the short lines of a tag
    section are found on one window's bits instead of a load that waits for the previous line.
    """
    if 0 <= i - w < _W:
        k = _first_bit(m, i - w)
        if k < _W:
            return w + k, w, m
        i = w + _W
    while i + _W <= n:
        w = i
        m = _mask(buf, w, _NL_CHARS)
        if m != 0:
            return w + np.int64(trailing_zeros(m)), w, m
        i += _W
    while i < n and not _nl(buf[i]):
        i += 1
    return i, w, m


@njit(inline="always", **JIT)
def _is_tag_line_w(buf, i, n):
    """_is_tag_line for buf[i] == '[', with the name's end found on a window mask."""
    if i + 1 + _W > n:
        return _is_tag_line(buf, i, n)
    other = ~_mask(buf, i + 1, _NAME_CHARS)
    if other == 0:
        return _is_tag_line(buf, i, n)   # a name of 64 bytes or more
    k = np.int64(trailing_zeros(other))
    if k == 0:
        return False
    k += i + 1
    while k < n and _blank(buf[k]):
        k += 1
    return k < n and buf[k] == 34


@njit(inline="always", **JIT)
def _ends_token(buf, i, n):
    return i >= n or (_CLS[buf[i]] & _TOK_END) != 0


@njit(inline="always", **JIT)
def _token_starts(buf, p, tok):
    """A movetext token starts at p: p is `tok` (the line's first byte or the one after a
    comment), or p > tok follows a blank or parenthesis. Bytes before tok do not count (a BOM,
    a comment's '}')."""
    return p == tok or (p > tok and (_CLS[buf[p - 1]] & _SEP) != 0)


@njit(inline="always", **JIT)
def _marker_len(buf, i, n, draughts):
    """Length of the termination marker token at i (* 1-0 0-1 1/2-1/2, draughts also 2-0 0-2
    1-1, followed by a token end), or 0."""
    x = buf[i]
    if x == 42:  # '*'
        return 1 if _ends_token(buf, i + 1, n) else 0
    if i + 2 < n and buf[i + 1] == 45:
        y = buf[i + 2]
        if ((x == 49 and y == 48) or (x == 48 and y == 49)
                or (draughts and ((x == 50 and y == 48) or (x == 48 and y == 50) or (x == 49 and y == 49)))):
            return 3 if _ends_token(buf, i + 3, n) else 0
        return 0
    if (x == 49 and i + 6 < n and buf[i + 1] == 47 and buf[i + 2] == 50 and buf[i + 3] == 45
            and buf[i + 4] == 49 and buf[i + 5] == 47 and buf[i + 6] == 50):
        return 7 if _ends_token(buf, i + 7, n) else 0
    return 0


@njit(**JIT)
def find_games(buf, n, final, draughts, starts):
    """Write game start offsets into `starts`; return (n_complete, consumed).

    Games whose end is not yet known (the last one, unless `final`) are not counted; `consumed`
    is where the next call must start. `starts` must hold n // 2 + 2 entries. buf: C-contiguous
    uint8.
    """
    state = _BETWEEN
    comment = False
    depth = 0
    ng = 0
    i = 0
    blank_before = False   # the previous line was blank (a tag line after it is a strong start)
    nl_w = -_W             # window of _line_end_w and its line-end bits
    nl_m = np.uint64(0)
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
        if c == 91 and _is_tag_line_w(buf, fi, n):
            # A tag line after a blank line also ends a game that has tags but no movetext
            # (the "strong start" where work units are cut), so it is not merged into the next.
            if state != _TAGS or after_blank:
                starts[ng] = ls
                ng += 1
                state = _TAGS
                comment = False
                depth = 0
            le, nl_w, nl_m = _line_end_w(buf, fi, n, nl_w, nl_m)
            i = _next_line(buf, le, n)
            continue
        if comment:
            # Continuation of a multi-line comment.
            j = _skip_to(buf, fi, n, _COMMENT_END_CHARS, _COMMENT_END)
            if j < n and buf[j] == 125:
                comment = False
                i = j + 1
                # Rest of the line is movetext: fall through by re-scanning from here.
            else:
                i = _next_line(buf, j, n)
                continue
        elif c == 37 or (state != _MOVETEXT and c == 59):
            # '%' escape line, or a ';' comment line outside movetext: belongs to the current game.
            le, nl_w, nl_m = _line_end_w(buf, fi, n, nl_w, nl_m)
            i = _next_line(buf, le, n)
            continue
        else:
            if state == _BETWEEN:
                starts[ng] = ls
                ng += 1
            state = _MOVETEXT
            i = fi
        # Scan movetext to the end of the line. Tokens end at blanks, line ends and { ( ) ;.
        tok = i
        while i < n:
            if state == _MOVETEXT:
                # Inside a game only the _STOP_CHARS matter: jump to the next one.
                if i + _W <= n:
                    # Lichess lines are mostly comments, `{ [%clk 0:01:00] } 12... Nxe5 { ...`:
                    # pass the comments that lie within the window on its bits, without a new
                    # load per stop (each load would wait for the previous stop's position).
                    stops = _mask(buf, i, _STOP_CHARS)
                    ends = _mask(buf, i, _COMMENT_END_CHARS)
                    k = _first_bit(stops, 0)
                    while k < _W and buf[i + k] == 123:
                        e = _first_bit(ends, k + 1)
                        if e == _W or buf[i + e] != 125:
                            break   # the comment goes past the window or the line: see below
                        tok = i + e + 1
                        k = _first_bit(stops, e + 1)
                    i += k
                    if k == _W:
                        continue
                else:
                    i = _skip_to(buf, i, n, _STOP_CHARS, _STOP)
                    if i >= n:
                        break
            c = buf[i]
            if _nl(c):
                break
            if c == 123:
                # A comment that did not fit in the window, or between games: skip its body.
                j = _skip_to(buf, i + 1, n, _COMMENT_END_CHARS, _COMMENT_END)
                if j < n and buf[j] == 125:
                    i = j + 1
                    tok = i
                else:
                    comment = True
                    i = j
                    break
            elif c == 59:
                i, nl_w, nl_m = _line_end_w(buf, i, n, nl_w, nl_m)
                break
            elif c == 40:
                depth += 1
                i += 1
            elif c == 41:
                if depth > 0:
                    depth -= 1
                i += 1
            elif _blank(c):
                # Only reached between games: inside one, blanks are not stop bytes.
                i += 1
            else:
                if state == _MOVETEXT:
                    # At '-' or '*' (the only other stop bytes). The game ends if this is part of
                    # a marker token, outside variations: '-' is the 2nd byte of 1-0 0-1 (2-0 0-2
                    # 1-1) or the 4th of 1/2-1/2, and '*' the whole marker.
                    p = i
                    if c == 45:
                        p = i - 3 if i - 3 >= tok and buf[i - 2] == 47 else i - 1
                    marker = depth == 0 and _token_starts(buf, p, tok)
                else:
                    # Movetext after a termination marker: a game without tags starts at this token.
                    starts[ng] = i
                    ng += 1
                    state = _MOVETEXT
                    p = i
                    marker = depth == 0
                m = _marker_len(buf, p, n, draughts) if marker else 0
                if m > 0:
                    state = _BETWEEN
                    i = p + m
                else:
                    i += 1
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
