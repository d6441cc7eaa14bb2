"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 9e93adc from the
leave-one-system-out predictions of 104 sweeps of 35 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.28783753660301736, 0.520984706015921, 21, 2104),
    'across nodes, < 64 KiB': (-0.3439331422059556, 0.45334491122504444, 21, 619),
    'across nodes, >= 1 MiB': (-0.1121588706312976, 0.21061901685485204, 28, 856),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.061226574761423055, 0.17044199575182928, 7, 3221),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2104, 1706, 21, 0.790774),
    'across nodes, < 64 KiB': (619, 483, 21, 0.789343),
    'across nodes, >= 1 MiB': (856, 627, 28, 0.788186),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (3221, 3166, 7, 0.759308),
    'all rows': (6894, 6049, 33, 0.785608),
}
