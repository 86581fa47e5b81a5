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

from typing import Any

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from analyzer.pgn._name_hash import HASH_BITS as _HASH_BITS, HASH_MUL as _HASH_MUL

# No numba runtime: these kernels never allocate, and without it calls between them pass
# arrays without atomic reference counting (see analyzer.kinds.chess._board.HOT).
HOT: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}

_BETWEEN = 0
_TAGS = 1
_MOVETEXT = 2


@njit(inline="always", **HOT)
def _nl(c):
    return c == 10 or c == 13


@njit(inline="always", **HOT)
def _blank(c):
    return c == 32 or c == 9 or c == 11 or c == 12


@njit(**HOT)
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


@njit(**HOT)
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


@njit(**HOT)
def _line_end(buf, i, n):
    while i < n and not _nl(buf[i]):
        i += 1
    return i


@njit(**HOT)
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
_NL_CHARS = (10, 13)  # \n \r
_COMMENT_END_CHARS = (125, 10, 13)  # } \n \r: end a comment body on its line
# Inside a game the movetext loop only needs line ends, { ( ) ; and the bytes that single out a
# termination marker: '*', and the '-' of 1-0 0-1 1/2-1/2 (draughts also 2-0 0-2 1-1).
# Moves, move numbers and the blanks between them are passed over a window at a time.
_STOP_CHARS = (10, 13, 123, 40, 41, 59, 45, 42)  # \n \r { ( ) ; - *
_NAME_CHARS = ((48, 57), (65, 90), (97, 122), 95, 45)  # tag names: 0-9 A-Z a-z _ -
# parse_tags reads a tag line on the bits of these sets (and of _NL_CHARS, _NAME_CHARS).
_BLANK_CHARS = (32, 9, 11, 12)
_Q_CHARS = (34,)  # "
_BS_CHARS = (92,)  # backslash
_LB_CHARS = (91,)  # [

# Bits of _CLS.
_SEP = 1  # a token starts after it: blank, ( )
_TOK_END = 2  # ends a token: line end, blank, { ( ) ;
_COMMENT_END = 4  # _COMMENT_END_CHARS
_STOP = 8  # _STOP_CHARS


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


def _is_bytes(t) -> bool:
    """A numba type the byte intrinsics below accept: a C-contiguous uint8 array."""
    return isinstance(t, types.Array) and t.layout == "C" and t.dtype == types.uint8


def _data(context, builder, signature, args, k):
    """Data pointer (i8*) of the array argument k of an intrinsic."""
    return context.make_array(signature.args[k])(context, builder, args[k]).data


def _byte_ptr(context, builder, signature, args, k, ik):
    """Pointer (i8*) to the byte of the array argument k at the index argument ik of an
    intrinsic: where the unaligned loads, stores and prefetches below act."""
    return builder.gep(_data(context, builder, signature, args, k), [args[ik]])


@intrinsic
def _mask(typingctx, buf, i, chars):
    """uint64 with bit k set when buf[i + k] (k < _W) is in `chars`.

    `chars` is a constant tuple of byte values and (lo, hi) ranges. buf: C-contiguous uint8;
    the caller makes sure that 0 <= i and i + _W <= n <= len(buf).
    """
    if not (_is_bytes(buf) and isinstance(chars, types.BaseTuple)):
        return None

    def codegen(context, builder, signature, args):
        data = _data(context, builder, signature, args, 0)
        vty = ir.VectorType(ir.IntType(8), _W)
        v = builder.load(builder.bitcast(builder.gep(data, [args[1]]), vty.as_pointer()), align=1)

        def splat(x):
            x = builder.trunc(x, ir.IntType(8))
            x = builder.insert_element(ir.Constant(vty, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(
                x, ir.Constant(vty, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), _W), [0] * _W)
            )

        hit = None
        for k, ty in enumerate(signature.args[2].types):
            item = builder.extract_value(args[2], k)
            if isinstance(ty, types.Integer):
                eq = builder.icmp_unsigned("==", v, splat(item))
            else:  # lo <= c <= hi as c - lo <= hi - lo, unsigned
                lo = builder.extract_value(item, 0)
                hi = builder.extract_value(item, 1)
                eq = builder.icmp_unsigned("<=", builder.sub(v, splat(lo)), splat(builder.sub(hi, lo)))
            hit = eq if hit is None else builder.or_(hit, eq)
        return builder.bitcast(hit, ir.IntType(_W))

    return types.uint64(buf, i, chars), codegen


@njit(inline="always", **HOT)
def _first_bit(m, k):
    """Index of the lowest set bit of the window mask m at or above k (0 <= k <= _W), or _W."""
    if k >= _W:
        return _W
    m >>= np.uint64(k)
    if m == 0:
        return _W
    return k + np.int64(trailing_zeros(m))


@intrinsic
def _bit_from(typingctx, m, k):
    """_first_bit as one LLVM expression (no branches, no numba inlining): index of the lowest
    set bit of the uint64 m at or above k (0 <= k), or _W."""
    if not (m == types.uint64 and isinstance(k, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        mv = args[0]
        kv = context.cast(builder, args[1], signature.args[1], types.int64)
        big = builder.icmp_unsigned(">=", kv, ir.Constant(i64, _W))
        sh = builder.select(big, ir.Constant(i64, 0), kv)
        mm = builder.select(big, ir.Constant(i64, 0), builder.lshr(mv, sh))
        tz = builder.cttz(mm, ir.Constant(ir.IntType(1), 0))
        r = builder.add(kv, tz)
        return builder.select(builder.icmp_unsigned("==", mm, ir.Constant(i64, 0)), ir.Constant(i64, _W), r)

    return types.int64(m, k), codegen


@njit(inline="always", **HOT)
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


@njit(inline="always", **HOT)
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


@njit(inline="always", **HOT)
def _is_tag_line_w(buf, i, n):
    """_is_tag_line for buf[i] == '[', with the name's end found on a window mask."""
    if i + 1 + _W > n:
        return _is_tag_line(buf, i, n)
    other = ~_mask(buf, i + 1, _NAME_CHARS)
    if other == 0:
        return _is_tag_line(buf, i, n)  # a name of 64 bytes or more
    k = np.int64(trailing_zeros(other))
    if k == 0:
        return False
    k += i + 1
    while k < n and _blank(buf[k]):
        k += 1
    return k < n and buf[k] == 34


@njit(inline="always", **HOT)
def _ends_token(buf, i, n):
    return i >= n or (_CLS[buf[i]] & _TOK_END) != 0


@njit(inline="always", **HOT)
def _token_starts(buf, p, tok):
    """A movetext token starts at p: p is `tok` (the line's first byte or the one after a
    comment), or p > tok follows a blank or parenthesis. Bytes before tok do not count (a BOM,
    a comment's '}')."""
    return p == tok or (p > tok and (_CLS[buf[p - 1]] & _SEP) != 0)


@njit(inline="always", **HOT)
def _marker_len(buf, i, n, draughts):
    """Length of the termination marker token at i (* 1-0 0-1 1/2-1/2, draughts also 2-0 0-2
    1-1, followed by a token end), or 0."""
    x = buf[i]
    if x == 42:  # '*'
        return 1 if _ends_token(buf, i + 1, n) else 0
    if i + 2 < n and buf[i + 1] == 45:
        y = buf[i + 2]
        if (
            (x == 49 and y == 48)
            or (x == 48 and y == 49)
            or (draughts and ((x == 50 and y == 48) or (x == 48 and y == 50) or (x == 49 and y == 49)))
        ):
            return 3 if _ends_token(buf, i + 3, n) else 0
        return 0
    if (
        x == 49
        and i + 6 < n
        and buf[i + 1] == 47
        and buf[i + 2] == 50
        and buf[i + 3] == 45
        and buf[i + 4] == 49
        and buf[i + 5] == 47
        and buf[i + 6] == 50
    ):
        return 7 if _ends_token(buf, i + 7, n) else 0
    return 0


@njit(**HOT)
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
    blank_before = False  # the previous line was blank (a tag line after it is a strong start)
    nl_w = -_W  # window of _line_end_w and its line-end bits
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
                            break  # the comment goes past the window or the line: see below
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


@intrinsic
def load_u64(typingctx, buf, i):
    """The 8 bytes buf[i:i + 8] as a little-endian uint64 (unaligned load; i + 8 <= len(buf))."""
    if not _is_bytes(buf):
        return None

    def codegen(context, builder, signature, args):
        ptr = builder.bitcast(_byte_ptr(context, builder, signature, args, 0, 1), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)

    return types.uint64(buf, i), codegen


@intrinsic
def _prefetch(typingctx, buf, i):
    """Hint that buf[i] will be read soon (no effect on results; i may be out of range)."""
    if not _is_bytes(buf):
        return None

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(
            ir.VoidType(), [ir.IntType(8).as_pointer(), ir.IntType(32), ir.IntType(32), ir.IntType(32)]
        )
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        ptr = _byte_ptr(context, builder, signature, args, 0, 1)
        builder.call(
            fn, [ptr, ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 3), ir.Constant(ir.IntType(32), 1)]
        )
        return context.get_dummy_value()

    return types.void(buf, i), codegen


# parse_tags (analyzer.pgn.tag_names) finds a tag name among the wanted ones with a hash of its
# length and first 8 bytes; _store_tag probes the table it builds.
_PREFETCH_GAMES = 4  # parse_tags prefetches the tag section of the game this far ahead,
_PREFETCH_LINES = 8  # this many cache lines of it


@njit(inline="always", **HOT)
def _store_tag(buf, ns, ne, names, name_off, h_start, h_order, h_key, h_mul, val_s, val_e, esc, g, vs, ve, has_esc):
    """Record the value of tag buf[ns:ne] if it is a wanted name (the first equal one)."""
    ln = ne - ns
    if ns + 8 <= len(buf):
        key = load_u64(buf, ns)
        if ln < 8:
            key &= (np.uint64(1) << np.uint64(8 * ln)) - np.uint64(1)
    else:
        key = np.uint64(0)
        for x in range(min(ln, 8)):
            key |= np.uint64(buf[ns + x]) << np.uint64(8 * x)
    h = np.int64(((key + np.uint64(ln) * np.uint64(_HASH_MUL)) * h_mul) >> np.uint64(64 - _HASH_BITS))
    for j in range(h_start[h], h_start[h + 1]):
        t = h_order[j]
        a = name_off[t]
        if h_key[t] != key or name_off[t + 1] - a != ln:
            continue
        same = True
        for x in range(8, ln):
            if names[a + x] != buf[ns + x]:
                same = False
                break
        if same:
            val_s[g, t] = vs
            val_e[g, t] = ve
            esc[g, t] = has_esc
            return


@njit(**HOT)
def _parse_tags(buf, starts, ends, names, name_off, h_start, h_order, h_key, h_mul, val_s, val_e, esc, mt_start):
    """parse_tags, with the wanted names' hash table (see _name_table)."""
    n_games = len(starts)
    n_names = len(name_off) - 1
    nb = len(buf)
    w = -_W  # window of tag lines and its bits: line ends, name characters,
    m_nl = np.uint64(0)  # blanks, quotes, backslashes, '['
    m_name = np.uint64(0)
    m_bl = np.uint64(0)
    m_q = np.uint64(0)
    m_bs = np.uint64(0)
    m_lb = np.uint64(0)
    for g in range(n_games):
        if g + _PREFETCH_GAMES < n_games:
            # The tag section of a game a few ahead: its first line is otherwise a cache miss.
            p = starts[g + _PREFETCH_GAMES]
            for x in range(_PREFETCH_LINES):
                if p + x * 64 < nb:
                    _prefetch(buf, p + x * 64)
        for t in range(n_names):
            val_s[g, t] = -1
            val_e[g, t] = -1
            esc[g, t] = False
        i = starts[g]
        e = ends[g]
        mt = e
        while i < e:
            if buf[i] == 91:
                # A line starting with '[' (the usual tag line) is read on the bits of the window
                # at w when it is a tag line that ends in the window and in the game; otherwise
                # below. The window moves to the line start when the line does not end in it.
                off = i - w
                ll = _bit_from(m_nl, off) if 0 <= off < _W else _W
                if ll == _W and i + _W <= nb:
                    w = i
                    off = 0
                    m_nl = _mask(buf, w, _NL_CHARS)
                    m_name = _mask(buf, w, _NAME_CHARS)
                    m_bl = _mask(buf, w, _BLANK_CHARS)
                    m_q = _mask(buf, w, _Q_CHARS)
                    m_bs = _mask(buf, w, _BS_CHARS)
                    m_lb = _mask(buf, w, _LB_CHARS)
                    ll = _bit_from(m_nl, 0)
                if ll < _W:
                    sh = np.uint64(off)
                    ll -= off  # line length
                    a = _bit_from(~(m_name >> sh), 1)  # name end
                    bl = m_bl >> sh
                    q = _bit_from(~bl, a)  # the quote
                    lq = m_q >> sh
                    if a >= 2 and q < ll <= e - i and ((lq >> np.uint64(q)) & np.uint64(1)) != 0:
                        lim = (np.uint64(1) << np.uint64(ll)) - np.uint64(1)
                        lq &= lim
                        bl &= lim
                        qb = lq | ((m_bs >> sh) & lim)
                        ns = 1
                        ne = a
                        while True:
                            v = _bit_from(qb, q + 1)
                            has_esc = False
                            while v < ll and buf[i + v] == 92:
                                if v + 1 < ll:
                                    has_esc = True
                                    v = _bit_from(qb, v + 2)
                                else:
                                    v = ll
                            v = min(v, ll)
                            _store_tag(
                                buf,
                                i + ns,
                                i + ne,
                                names,
                                name_off,
                                h_start,
                                h_order,
                                h_key,
                                h_mul,
                                val_s,
                                val_e,
                                esc,
                                g,
                                i + q + 1,
                                i + v,
                                has_esc,
                            )
                            # The next tag on the line, if any.
                            lb = (m_lb >> sh) & lim
                            k = _bit_from(lb, v + 1)
                            found = False
                            while k < ll:
                                ns = k + 1
                                ne = min(_bit_from(bl | lq, ns), ll)
                                q = min(_bit_from(~bl & lim, ne), ll)
                                if q < ll and buf[i + q] == 34:
                                    found = True
                                    break
                                k = _bit_from(lb, q + 1)
                            if not found:
                                break
                        i = _next_line(buf, i + ll, e)
                        continue
            # Other lines, byte by byte.
            fi = i
            c = buf[i]
            if _blank(c) or c == 0xEF:
                fi = _skip_line_space(buf, i, e)
                if fi >= e:
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
                    if b - a == ne - ns and _equal_bytes(names, a, buf, ns, b - a):
                        val_s[g, t] = vs
                        val_e[g, t] = ve
                        esc[g, t] = has_esc
                        break
                k = ve + 1
            i = _next_line(buf, le, e)
        mt_start[g] = mt


@intrinsic
def _copy32(typingctx, dst, di, src, si):
    """dst[di:di + 32] = src[si:si + 32] (unaligned; the caller keeps both in range)."""
    if not (_is_bytes(dst) and _is_bytes(src)):
        return None

    def codegen(context, builder, signature, args):
        vty = ir.VectorType(ir.IntType(8), 32).as_pointer()
        v = builder.load(builder.bitcast(_byte_ptr(context, builder, signature, args, 2, 3), vty), align=1)
        builder.store(v, builder.bitcast(_byte_ptr(context, builder, signature, args, 0, 1), vty), align=1)
        return context.get_dummy_value()

    return types.void(dst, di, src, si), codegen


@njit(inline="always", **HOT)
def _equal_bytes(x, xa, y, ya, n):
    """x[xa:xa + n] == y[ya:ya + n]"""
    for k in range(n):
        if x[xa + k] != y[ya + k]:
            return False
    return True


_GATHER_AHEAD = 16  # gather_strings, parse_int_values: prefetch the value this many rows ahead


@njit(**HOT)
def gather_strings(buf, vs, ve, esc, offsets, data):
    """Copy value bytes into one Arrow data buffer (unescaping \\" and \\\\); offsets int32 n+1.

    Returns the data length p; bytes of `data` past p are unspecified (values are copied 32
    bytes at a time where both buffers have room).
    """
    p = 0
    n = len(vs)
    nb = len(buf)
    nd = len(data)
    for g in range(n):
        if g + _GATHER_AHEAD < n:
            # Values lie one per game along the text: the next ones are otherwise cache misses.
            _prefetch(buf, max(vs[g + _GATHER_AHEAD], 0))
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
            while b - a >= 1 and a + 32 <= nb and p + 32 <= nd:
                _copy32(data, p, buf, a)
                step = min(b - a, 32)
                a += step
                p += step
            for k in range(a, b):
                data[p] = buf[k]
                p += 1
    offsets[n] = p
    return p


@njit(**HOT)
def parse_int_values(buf, vs, ve, out, valid):
    """Parse decimal integers (e.g. Elo); invalid or absent -> valid False."""
    n = len(vs)
    for g in range(n):
        if g + _GATHER_AHEAD < n:
            _prefetch(buf, max(vs[g + _GATHER_AHEAD], 0))
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


@njit(**HOT)
def dictionary_codes(buf, vs, ve, esc, codes, first, table):
    """Dictionary-encode the values buf[vs[g]:ve[g]] by their bytes: codes[g] = index of the
    distinct value (-1 where absent), first[u] = the row where value u first occurs. `table`
    is an open-addressing scratch of -1s, a power of two larger than the row count. Returns
    the number of distinct values, or -1 at the first escaped value (whose bytes are not its
    text: the caller encodes that column in Arrow instead)."""
    mask = len(table) - 1
    u = 0
    n = len(vs)
    for g in range(n):
        if g + _GATHER_AHEAD < n:
            _prefetch(buf, max(vs[g + _GATHER_AHEAD], 0))
        a = vs[g]
        if a < 0:
            codes[g] = -1
            continue
        if esc[g]:
            return -1
        b = ve[g]
        h = np.uint64(14695981039346656037)
        for k in range(a, b):
            h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
        slot = np.int64(h & np.uint64(mask))
        while True:
            v = table[slot]
            if v < 0:
                table[slot] = u
                first[u] = g
                codes[g] = u
                u += 1
                break
            f = first[v]
            if ve[f] - vs[f] == b - a and _equal_bytes(buf, vs[f], buf, a, b - a):
                codes[g] = v
                break
            slot = (slot + 1) & mask
    return u


analyzer._numba_env.plain_calls(globals())
