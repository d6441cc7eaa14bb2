"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit b0d2989 from the
leave-one-system-out predictions of 149 sweeps of 47 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2889707747294549, 1.0724977450134234, 25, 2126),
    'across nodes, < 64 KiB': (-0.3519068638632489, 0.496555697060611, 24, 677),
    'across nodes, >= 1 MiB': (-0.10749790477461477, 0.22769045328027665, 37, 1088),
    'one node, 64 KiB-1 MiB': (-0.35077262798472203, 0.32381629971124337, 7, 38),
    'one node, < 64 KiB': (-0.19574762025792414, 0.9064575385923079, 6, 82),
    'one node, >= 1 MiB': (-0.0800210016344961, 0.17044199575182928, 11, 3343),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2126, 1817, 25, 0.794229),
    'across nodes, < 64 KiB': (677, 526, 24, 0.790272),
    'across nodes, >= 1 MiB': (1088, 796, 37, 0.79507),
    'one node, 64 KiB-1 MiB': (38, 29, 7, 0.702381),
    'one node, < 64 KiB': (82, 61, 6, 0.67094),
    'one node, >= 1 MiB': (3343, 3219, 11, 0.771004),
    'all rows': (7354, 6448, 44, 0.803378),
}
