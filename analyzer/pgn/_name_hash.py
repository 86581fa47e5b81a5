"""The constants of the tag-name hash that tag_names builds (Python) and _scan probes (numba): in a
module of their own, which both import, so that neither imports the other."""

HASH_BITS = 7
HASH_MUL = 0x9E3779B97F4A7C15
