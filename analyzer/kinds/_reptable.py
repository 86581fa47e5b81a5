"""Occurrence counts in long repetition windows, in constant time per position (issue 36).

A repetition window is the run of positions since the last irreversible move; a position's
occurrence count is how often its key occurred in its window among the positions of its parity
(the side to move). Real games have short windows (almost all under 20 positions): there the
kernels walk back over the window (`count_back`, filtered by a 64-bit seen-set), which is
the fastest thing to do. A generated or garbage game can hold one window of millions of
positions, and a walk per position (and per legal move of the intended-move look-ahead) made the
replay quadratic: 100,000 plies of `Nf3 Nf6 Ng1 Ng8` took 17 s.

So once a window holds more than LONG_WINDOW positions, a count that would walk back (the key's
seen-set bit is set) or a look-ahead move asks an open-addressing hash table, (key, parity) ->
occurrences so far, instead: the table gets the window's positions in order, each once, when a
count or a lookup first needs them (`sync`), so a position costs one insertion and a lookup
at most, and positions the seen-set says are new cost what they did before the table. The
table is allocated once per batch (the replays) or per call (the rule kernels), sized to the
longest game, and never cleared: each tabled window has its own generation number, and a slot
whose tag is of another generation is empty. The 1997-2005 identity's windows (FLAG_WINDOW97)
are sub-windows of the 2009 ones: a slot also holds the count since the current 1997 window
start (with that window's generation).

The chess replay, its variants' replay and the chess rule kernels count among the positions of
p's parity, as their walk does (stepping back by 2); the Russian draughts replay counts every
position of the window, as its walk does (`by_parity` False).

Every function here takes the table as one tuple `tab = (t_key, t_tag, t_cnt, t_tag97, t_cnt97,
state)` (`new_table`) and none allocates (they run on the `_nrt=False` paths).
"""

from __future__ import annotations

from typing import Any

import analyzer._numba_env  # NUMBA_CACHE_DIR before numba loads or compiles kernels

import numpy as np
from numba import njit

U1 = np.uint64(1)
JIT: dict[str, Any] = {"cache": True, "nogil": True}
HOT: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}  # helpers that do not allocate (see chess._board)

# Windows of at most this many positions are walked; longer ones are tabled (from their
# LONG_WINDOW + 1-th position on). A walk of a short window is cheaper than hashing: real games
# almost never reach the table.
LONG_WINDOW = 64

# state[...]: the table's bookkeeping (int64).
T_WS = 0  # start (position index) of the window now in the table; -1: none
T_GEN = 1  # that window's generation (slot tags are 2 * generation + parity)
T_LIVE = 2  # (key, parity) pairs of that window in the table
T_WS97 = 3  # start of the 1997 window whose counts t_cnt97 holds
T_GEN97 = 4  # its generation (t_tag97)
T_FULL = 5  # start of a window that did not fit in the table (walked: never the case with new_table's sizes)
T_NEXT = 6  # the next position of the window to go in (positions go in lazily: sync)
N_STATE = 8


@njit(**HOT)
def count_back(keys, p, ws, k):
    """Occurrences of k among positions ws..p with p's parity (stepping back by 2)."""
    n = 0
    q = p
    while q >= ws:
        if keys[q] == k:
            n += 1
        q -= 2
    return n


@njit(forceinline=True, **HOT)
def repetition_count(keys, p, ws, k, seen):
    """(count_back(keys, p, ws, k) for keys[p] == k, seen with k's bit set), filtered: `seen`
    holds one bit (the key's top 6 bits) per position of p's parity since the window start ws
    (the caller keeps one word per parity and clears both there); a clear bit means k occurs
    for the first time, so most positions skip the walk back."""
    bit = U1 << (k >> np.uint64(58))
    if seen & bit:
        return count_back(keys, p, ws, k), seen
    return 1, seen | bit


@njit(**JIT)
def new_table(longest, slots, with97):
    """A table of at least `slots` slots (a window may fill 3/4 of them) if a game of `longest`
    positions can have a long window, else a token one; with97: with the 1997 counts."""
    size = 1
    if longest > LONG_WINDOW:
        while size < slots:
            size *= 2
    size97 = size if with97 else 1
    state = np.zeros(N_STATE, np.int64)
    state[T_WS] = -1
    state[T_WS97] = -1
    state[T_FULL] = -1
    return (
        np.empty(size, np.uint64),
        np.zeros(size, np.int32),  # generation 0 is never used: every slot starts empty
        np.empty(size, np.int32),
        np.zeros(size97, np.int32),
        np.empty(size97, np.int32),
        state,
    )


@njit(inline="always", **HOT)
def _slot(t_key, t_tag, k, tag):
    """The slot of (k, tag) in the current generation (tag >> 1), or the empty slot where it goes."""
    mask = np.uint64(len(t_key) - 1)
    gen = tag >> 1
    s = k & mask
    while True:
        tg = t_tag[s]
        if (tg >> 1) != gen or (tg == tag and t_key[s] == k):
            return s
        s = (s + np.uint64(1)) & mask


@njit(**HOT)
def _add(tab, k, parity, in97):
    """One more occurrence of key k at a position of that parity (in the current 1997 window if
    in97): its count so far in the window, or -1 if the table is full."""
    t_key, t_tag, t_cnt, t_tag97, t_cnt97, state = tab
    gen = state[T_GEN]
    tag = np.int32(2 * gen + parity)
    s = _slot(t_key, t_tag, k, tag)
    if (t_tag[s] >> 1) != gen:
        if 4 * (state[T_LIVE] + 1) > 3 * len(t_key):
            return -1
        state[T_LIVE] += 1
        t_key[s] = k
        t_tag[s] = tag
        t_cnt[s] = 1
        if len(t_tag97) > 1:
            t_tag97[s] = np.int32(state[T_GEN97]) if in97 else np.int32(0)
            t_cnt97[s] = 1
        return 1
    t_cnt[s] += 1
    if in97 and len(t_tag97) > 1:
        g97 = np.int32(state[T_GEN97])
        if t_tag97[s] == g97:
            t_cnt97[s] += 1
        else:
            t_tag97[s] = g97
            t_cnt97[s] = 1
    return np.int64(t_cnt[s])


@njit(**HOT)
def lookup(tab, k, parity):
    """(occurrences of key k at positions of that parity in the tabled window, in its current
    1997 window) so far."""
    t_key, t_tag, t_cnt, t_tag97, t_cnt97, state = tab
    gen = state[T_GEN]
    tag = np.int32(2 * gen + parity)
    s = _slot(t_key, t_tag, k, tag)
    if t_tag[s] != tag:
        return np.int64(0), np.int64(0)
    c97 = np.int64(0)
    if len(t_tag97) > 1 and t_tag97[s] == np.int32(state[T_GEN97]):
        c97 = np.int64(t_cnt97[s])
    return np.int64(t_cnt[s]), c97


@njit(**HOT)
def _start97(tab, ws97):
    """The 1997 window now starts at ws97 (a new generation of t_cnt97 if it moved)."""
    state = tab[5]
    if state[T_WS97] != ws97:
        state[T_GEN97] += 1
        state[T_WS97] = ws97


@njit(**HOT)
def sync(tab, keys, p, ws, ws97, by_parity):
    """Make the table hold the positions ws..p of the window that starts at ws (a new generation
    if another window is there; the positions not in it yet go in, in order): True, or False if
    the window does not fit (then the caller walks it). Positions go in lazily, whenever a count
    or a lookup needs them, so that the callers' common path (a position seen for the first
    time, by its seen-set) does not touch the table. by_parity: counts per parity of the
    position index (the chess kernels), else over every position (draughts). ws97 (>= ws): the
    current 1997 window start, or ws; the 1997 counts hold the positions from it on."""
    state = tab[5]
    if state[T_WS] != ws:
        if state[T_FULL] == ws:
            return False
        state[T_WS] = ws
        state[T_GEN] += 1
        state[T_LIVE] = 0
        state[T_NEXT] = ws
        state[T_WS97] = -1
    # (every position inserted so far is before ws97 if it moved since: they were inserted by a
    # call for an earlier position, when ws97 was still the old one)
    _start97(tab, ws97)
    for q in range(state[T_NEXT], p + 1):
        if _add(tab, keys[q], (q & 1) if by_parity else 0, q >= ws97) < 0:
            state[T_WS] = -1
            state[T_FULL] = ws
            return False
    state[T_NEXT] = max(state[T_NEXT], p + 1)
    return True


@njit(inline="always", **HOT)
def tabled(tab, ws):
    """The window that starts at ws is in the table (as far as the last sync put it there)."""
    return tab[5][T_WS] == ws


@njit(**HOT)
def count_tabled(tab, keys, p, ws, ws97, k, by_parity):
    """Occurrences of k = keys[p] among the positions ws..p of p's parity (every position if not
    by_parity) from the table (sync), or -1 if the window does not fit (the caller walks it)."""
    if not sync(tab, keys, p, ws, ws97, by_parity):
        return -1
    return lookup(tab, k, (p & 1) if by_parity else 0)[0]


@njit(**HOT)
def _count_long(tab, keys, p, ws, ws97, k):
    """count_tabled per parity, or the walk if the window does not fit."""
    c = count_tabled(tab, keys, p, ws, ws97, k, True)
    if c < 0:
        c = count_back(keys, p, ws, k)
    return c


@njit(inline="always", **HOT)
def occurrences(tab, keys, p, ws, ws97, k, seen):
    """(occurrences of k = keys[p] among the positions ws..p of p's parity, seen with k's bit):
    repetition_count, whose walk back (only for a key whose seen-set bit is set) is a table
    lookup once the window is long (sync: ws97 the current 1997 window start, or ws). Positions
    seen for the first time, by the seen-set, cost what they did before the table."""
    bit = U1 << (k >> np.uint64(58))
    if seen & bit:
        if p - ws >= LONG_WINDOW:
            return _count_long(tab, keys, p, ws, ws97, k), seen
        return count_back(keys, p, ws, k), seen
    return 1, seen | bit


analyzer._numba_env.plain_calls(globals())
