"""Arrow schemas of the output tables: the data contract every reader and rule set writes to.

One schema for chess and draughts alike, so researchers can stack any outputs. Columns that a
game type does not use are null (e.g. `first_fifty_ply` for draughts).
"""
from __future__ import annotations

import pyarrow as pa

_DICT = pa.dictionary(pa.int32(), pa.string())

# Status codes of a game (the `status` column). `ok` = analyzed to the end of its movetext.
STATUS_OK = "ok"
STATUS_CODES = (
    "ok",
    "illegal_move",        # a move that is not legal in the position (facts kept up to the last legal ply)
    "ambiguous_move",      # a SAN move that matches several legal moves
    "bad_token",           # movetext token that is neither a move nor PGN syntax
    "null_move",           # "--" / "Z0": not a legal chess move; facts up to it
    "bad_fen",             # [FEN] that cannot be parsed or is not a legal position
    "unsupported_variant", # [Variant] other than standard / chess960 / from position
    "no_moves",            # a game with tags but no movetext (analyzed as a 0-ply game)
    "game_too_large",      # a game above the configured maximum size in bytes
    "truncated",           # the input ended inside this game (damaged download)
    "decode_error",        # the compressed input is damaged here; games in the damage are lost to it
    "internal_error",      # a bug: the kernel failed on this batch; message says where
    "unterminated",        # a comment or variation still open at the end of the game (moves before it analyzed)
)

GAMES_SCHEMA = pa.schema([
    ("source", _DICT),
    ("game_type", _DICT),          # chess | russian_draughts
    ("edition", _DICT),            # fide_2018, ...
    ("game_index", pa.int64()),    # 0-based within the source
    ("byte_offset", pa.int64()),   # start of the game in the decompressed text
    ("event", pa.string()),
    ("site", pa.string()),
    ("white", pa.string()),
    ("black", pa.string()),
    ("result", _DICT),
    ("white_elo", pa.int32()),
    ("black_elo", pa.int32()),
    ("time_control", _DICT),
    ("termination", _DICT),
    ("eco", _DICT),
    ("utc_date", pa.string()),
    ("utc_time", pa.string()),
    ("date", pa.string()),
    ("variant", _DICT),
    ("start_fen", pa.string()),
    ("status", _DICT),
    ("error", pa.string()),
    ("error_ply", pa.int32()),     # ply at which replay stopped (the position before the bad move)
    ("plies", pa.int32()),         # half-moves replayed
    ("first_threefold_ply", pa.int32()),
    ("first_threefold_claim_ply", pa.int32()),
    ("first_fifty_ply", pa.int32()),
    ("first_fifty_claim_ply", pa.int32()),
    ("first_fivefold_ply", pa.int32()),
    ("first_seventyfive_ply", pa.int32()),
    ("first_missed_claim_ply", pa.int32()),
    ("missed_claim_rule", _DICT),
    ("missed_claim_side", _DICT),   # white | black
    ("missed_claim_result", _DICT), # win | draw | loss (for the side that missed), null if unknown
    ("plies_after_missed_claim", pa.int32()),
    ("missed_claim_clock_seconds", pa.float32()),
    ("final_repetition_count", pa.int16()),
    ("final_halfmove_clock", pa.int32()),
    ("final_is_checkmate", pa.bool_()),
    ("final_is_stalemate", pa.bool_()),
    ("final_insufficient_material", pa.bool_()),
    ("draw_reason", _DICT),         # for drawn games: stalemate, insufficient_material, fivefold, seventyfive, threefold, fifty, agreement
    ("end_ply", pa.int32()),        # counterfactual: where the game ends under the edition's automatic rules (null = as played)
    ("end_rule", _DICT),
    ("end_result", _DICT),
    ("result_changed", pa.bool_()),
    # draughts-only (section 32 / FMJD-64): first ply each draughts rule applied
    ("first_balance_ply", pa.int32()),        # no change in the balance of forces for the limit
    ("first_kings_vs_king_ply", pa.int32()),  # 3+ kings vs lone king not captured in time
    ("first_main_diagonal_ply", pa.int32()),  # 3 kings vs king on the main diagonal
    ("first_small_ending_ply", pa.int32()),   # 2 kings / king+man vs man or king
    # Lichess variants (analyzer.variants): the final position ends the game by the variant's own
    # rule (king exploded, hill reached, third check, race won, antichess, horde wiped out), as
    # python-chess's variant board decides it: the winner "white" / "black", or "draw".
    ("variant_end", _DICT),
])

EVENTS_SCHEMA = pa.schema([
    ("source", _DICT),
    ("game_type", _DICT),
    ("edition", _DICT),
    ("game_index", pa.int64()),
    ("ply", pa.int32()),
    ("rule", _DICT),         # threefold | fifty | fivefold | seventyfive | offer | draughts rules
    ("kind", _DICT),         # claim_now | claim_intended | automatic | offer
    ("side", _DICT),         # white | black: the side entitled (the side to move)
    ("repetition_count", pa.int16()),
    ("halfmove_clock", pa.int32()),
    ("clock_seconds", pa.float32()),
    ("missed", pa.bool_()),
])


def empty_table(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Add missing columns as nulls, order and cast to `schema` (dictionary columns encoded)."""
    n = table.num_rows
    index = {name: i for i, name in enumerate(table.schema.names)}  # (table.column_names is slow)
    cols = []
    for field in schema:
        i = index.get(field.name)
        if i is not None:
            col = table.column(i)
            if col.type != field.type:
                if pa.types.is_dictionary(field.type) and not pa.types.is_dictionary(col.type):
                    col = col.cast(pa.string()).dictionary_encode()
                    col = col.cast(field.type)
                else:
                    col = col.cast(field.type)
            cols.append(col)
        else:
            cols.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(cols, schema=schema)
