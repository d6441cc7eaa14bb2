"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 5164c7d from the
leave-one-system-out predictions of 35 sweeps of 12 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-1.1449799210145557, 1.0880842977020266, 7, 1972),
    'across nodes, < 64 KiB': (-1.4732863216130412, 1.1450346271463334, 7, 288),
    'across nodes, >= 1 MiB': (-0.3295411472966143, 0.5035906894867491, 8, 190),
    'one node, 64 KiB-1 MiB': (-0.5561596150582614, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.19574762025792414, 0.5062111990221612, 4, 70),
    'one node, >= 1 MiB': (-0.168345484894163, 0.08921287107672725, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (1972, 1585, 7, 0.698065),
    'across nodes, < 64 KiB': (288, 262, 7, 0.714286),
    'across nodes, >= 1 MiB': (190, 142, 8, 0.758972),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 105, 5, 0.692174),
    'all rows': (2682, 2161, 11, 0.73867),
}
