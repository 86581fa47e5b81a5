"""Draw-rule kernels over replay facts, parameterised by an edition."""
