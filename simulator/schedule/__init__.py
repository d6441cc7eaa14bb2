"""Schedule layer: WHAT runs on which rank, in which order, with which dependencies.

Knows the model and the parallel plan; knows no topology and no time.
"""
