"""The train.log reader as it was before the streaming rewrite (commit fd5bcf4), frozen as a test oracle.

tests/test_train_log_equivalence.py compares today's reader with it field by field.
Do not edit: it is the reference the new reader must agree with.
"""
