"""Variant codes (plain ints, importable without numba)."""

V_STANDARD = 0
V_KOTH = 1
V_THREECHECK = 2
V_ANTICHESS = 3
V_ATOMIC = 4
V_HORDE = 5
V_RACINGKINGS = 6
V_CRAZYHOUSE = 7
VARIANT_NAMES = ("standard", "kingofthehill", "threecheck", "antichess", "atomic", "horde", "racingkings", "crazyhouse")
