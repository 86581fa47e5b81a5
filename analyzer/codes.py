"""One vocabulary for every game kind: the small integers the kernels write and the names the
tables show. A kernel imports the constants (numba freezes them at compile time); the table
builder turns codes into dictionary columns with the name tuples. -1 means null everywhere.

Adding a name: append it (codes are positions in the tuples; never reorder).
"""

from __future__ import annotations

# Status of a game (the `status` column). `ok` = analyzed to the end of its movetext.
STATUSES = (
    "ok",
    "illegal_move",  # a move that is not legal in the position (facts kept up to the last legal ply)
    "ambiguous_move",  # a move that matches several legal moves
    "bad_token",  # movetext token that is neither a move nor PGN/PDN syntax
    "null_move",  # "--" / "Z0" (chess: replayed as a pass, as python-chess does) or a placeholder
    "bad_fen",  # [FEN] that cannot be parsed or is not a legal position
    "unsupported_variant",  # [Variant]/[GameType] of a game kind the analyzer does not handle
    "no_moves",  # a game with tags but no movetext (analyzed as a 0-ply game)
    "game_too_large",  # a game above the configured maximum size in bytes
    "truncated",  # the input ended inside this game (damaged download)
    "decode_error",  # the compressed input is damaged here; games in the damage are lost to it
    "internal_error",  # a bug: the kernel failed on this game; message says where
    "unterminated",  # a comment or variation still open at the end of the game (moves before it analyzed)
)
(
    S_OK,
    S_ILLEGAL,
    S_AMBIGUOUS,
    S_BAD_TOKEN,
    S_NULL_MOVE,
    S_BAD_FEN,
    S_UNSUPPORTED,
    S_NO_MOVES,
    S_TOO_LARGE,
    S_TRUNCATED,
    S_DECODE_ERROR,
    S_INTERNAL,
    S_UNTERMINATED,
) = range(len(STATUSES))
STATUS_INDEX = {s: i for i, s in enumerate(STATUSES)}

# Draw rules (events' `rule`, verdicts' `*_rule`): chess first, then draughts (section 32 / FMJD-64).
RULES = (
    "threefold",
    "fifty",
    "fivefold",
    "seventyfive",
    "offer",
    "insufficient_material",
    "balance",
    "kings_vs_king",
    "main_diagonal",
    "small_ending",
    "king_moves",
    "stalemate",  # counterfactual editions only (stalemate_wins): stalemate ends the game as a win
    # chess: a dead position ends the game (FIDE 5.2.2; 9.6 before 2014), and a loss on time is a
    # draw when the winner could not checkmate by any series of legal moves (FIDE 6.9)
    "dead_position",
    "timeout_vs_unwinnable",
)
(
    R_THREEFOLD,
    R_FIFTY,
    R_FIVEFOLD,
    R_SEVENTYFIVE,
    R_OFFER,
    R_INSUFFICIENT,
    R_BALANCE,
    R_KINGS_VS_KING,
    R_MAIN_DIAGONAL,
    R_SMALL_ENDING,
    R_KING_MOVES,
    R_STALEMATE,
    R_DEAD_POSITION,
    R_TIMEOUT_UNWINNABLE,
) = range(len(RULES))

# What kind of chance an event is.
KINDS = ("claim_now", "claim_intended", "automatic", "offer")
K_NOW, K_INTENDED, K_AUTO, K_OFFER = range(len(KINDS))

# What happened to a chance (events' `outcome`; docs/measures.md):
#   claimed    the game ended drawn at this chance (a written-move claim is recorded as the last move)
#   missed     a chance on the board, and the game went on
#   avoided    a written-move chance, and the move played did not make the position claimable
#   passed_on  a written-move chance whose move was played and handed the board chance to the opponent
#   automatic  an automatic draw rule applied here
#   ended      the game ended at this chance without a draw (a decisive or unknown result)
OUTCOMES = ("claimed", "missed", "avoided", "passed_on", "automatic", "ended")
O_CLAIMED, O_MISSED, O_AVOIDED, O_PASSED_ON, O_AUTOMATIC, O_ENDED = range(len(OUTCOMES))

SIDES = ("white", "black")
WHITE, BLACK = 0, 1

# Recorded results, as the kernels read them.
RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
RESULT_WHITE, RESULT_BLACK, RESULT_DRAW, RESULT_UNKNOWN = range(len(RESULTS))
# A result seen from one side.
SIDE_RESULTS = ("win", "draw", "loss")
SR_WIN, SR_DRAW, SR_LOSS = range(len(SIDE_RESULTS))

# Why a drawn game was drawn (verdicts' `draw_reason`), as far as the moves tell.
DRAW_REASONS = (
    "timeout_vs_insufficient_material",
    "stalemate",
    "insufficient_material",
    "fivefold",
    "seventyfive",
    "threefold",
    "fifty",
    "agreement",
    "balance",
    "kings_vs_king",
    "main_diagonal",
    "small_ending",
    "king_moves",
    "dead_position",  # the final position is dead (no mate possible), under editions that end games there
)
(
    DR_TIMEOUT_VS_INSUFFICIENT,
    DR_STALEMATE,
    DR_INSUFFICIENT,
    DR_FIVEFOLD,
    DR_SEVENTYFIVE,
    DR_THREEFOLD,
    DR_FIFTY,
    DR_AGREEMENT,
    DR_BALANCE,
    DR_KINGS_VS_KING,
    DR_MAIN_DIAGONAL,
    DR_SMALL_ENDING,
    DR_KING_MOVES,
    DR_DEAD_POSITION,
) = range(len(DRAW_REASONS))

# The verdict matrix a rule kernel fills, one row per game (int32, -1 = null), in this order.
VERDICT_COLUMNS = (
    "first_threefold_ply",
    "first_threefold_claim_ply",
    "first_fifty_ply",
    "first_fifty_claim_ply",
    "first_fivefold_ply",
    "first_seventyfive_ply",
    "first_balance_ply",
    "first_kings_vs_king_ply",
    "first_main_diagonal_ply",
    "first_small_ending_ply",
    "draw_reason",
    "end_ply",
    "end_rule",
    # filled from the events by analyzer.measures (the same for every kind)
    "first_missed_claim_ply",
    "missed_claim_rule",
    "missed_claim_side",
    "first_avoided_claim_ply",
    "avoided_claim_rule",
    "avoided_claim_side",
    # the first chance whose outcome is `claimed` (analyzer.measures), beside the missed columns
    "claimed_ply",
    "claimed_rule",
    # the result the edition's end at end_ply gives (a RESULTS code); -1: a draw where end_ply is set
    "end_result",
    # chess: the first dead position, under editions that end the game there (FIDE), and whether
    # a loss on time went to a winner who could not mate (1) or could (0), by the edition's test
    "dead_position_ply",
    "timeout_unwinnable",
)
(
    V_THREEFOLD,
    V_THREEFOLD_CLAIM,
    V_FIFTY,
    V_FIFTY_CLAIM,
    V_FIVEFOLD,
    V_SEVENTYFIVE,
    V_BALANCE,
    V_KINGS_VS_KING,
    V_MAIN_DIAGONAL,
    V_SMALL_ENDING,
    V_DRAW_REASON,
    V_END_PLY,
    V_END_RULE,
    V_MISSED_PLY,
    V_MISSED_RULE,
    V_MISSED_SIDE,
    V_AVOIDED_PLY,
    V_AVOIDED_RULE,
    V_AVOIDED_SIDE,
    V_CLAIMED_PLY,
    V_CLAIMED_RULE,
    V_END_RESULT,
    V_DEAD_POSITION,
    V_TIMEOUT_UNWINNABLE,
) = range(len(VERDICT_COLUMNS))
N_VERDICT = len(VERDICT_COLUMNS)
# Which verdict columns hold codes (and of which vocabulary); the others are plies.
VERDICT_CODED = {
    "draw_reason": DRAW_REASONS,
    "end_rule": RULES,
    "missed_claim_rule": RULES,
    "missed_claim_side": SIDES,
    "avoided_claim_rule": RULES,
    "avoided_claim_side": SIDES,
    "claimed_rule": RULES,
    "end_result": RESULTS,
}
# Verdict columns that are booleans (1 / 0, -1 = null).
VERDICT_BOOL = ("timeout_unwinnable",)

# Can a side still checkmate (chess; analyzer.kinds.chess._unwinnable): the answer for a
# position and an intended winner.
WINNABILITY = ("winnable", "unwinnable", "unknown")
W_WINNABLE, W_UNWINNABLE, W_UNKNOWN = range(len(WINNABILITY))
# How it was answered: a certificate (winnable), the kind of proof (unwinnable), or the work
# budget spent (unknown); docs/rules.md 1.4.
PROOF_KINDS = ("certificate", "insufficient_material", "blocked", "search", "budget")
PK_CERTIFICATE, PK_INSUFFICIENT, PK_BLOCKED, PK_SEARCH, PK_BUDGET = range(len(PROOF_KINDS))
# The text of an answer that is not a certificate, as the tables hold it (by PK_*).
PROOF_TEXT = ("", *(f"unwinnable:{k}" for k in PROOF_KINDS[1:-1]), "unknown:budget")

# Edition-independent facts of a game a replay reports (games table, int32, -1 = null).
GAME_FACT_COLUMNS = (
    "first_third_occurrence_ply",
    "first_fifth_occurrence_ply",
    "first_halfmove_clock_100_ply",
    "first_halfmove_clock_150_ply",
    "final_repetition_count",
    "final_halfmove_clock",
    "final_is_checkmate",
    "final_is_stalemate",
    "final_insufficient_material",
)
(
    F_THIRD,
    F_FIFTH,
    F_CLOCK100,
    F_CLOCK150,
    F_FINAL_REPS,
    F_FINAL_HMC,
    F_FINAL_MATE,
    F_FINAL_STALEMATE,
    F_FINAL_INSUFFICIENT,
) = range(len(GAME_FACT_COLUMNS))
N_GAME_FACTS = len(GAME_FACT_COLUMNS)
