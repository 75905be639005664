# lesson: 06_debugging_projection_reuse
# expect: wrong FixedMultiHeadAttention not-implemented
# The released stub, untouched.
