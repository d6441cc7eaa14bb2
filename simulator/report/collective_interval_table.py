"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 43df9b1 from the
leave-one-system-out predictions of 81 sweeps of 23 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-1.0703919535026043, 0.9926309238975157, 14, 2052),
    'across nodes, < 64 KiB': (-0.8713138952710688, 0.5213576557618862, 14, 482),
    'across nodes, >= 1 MiB': (-0.30890139307677966, 0.3823306302161075, 19, 680),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.168345484894163, 0.08921287107672725, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2052, 1750, 14, 0.778385),
    'across nodes, < 64 KiB': (482, 332, 14, 0.738566),
    'across nodes, >= 1 MiB': (680, 530, 19, 0.790447),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 104, 5, 0.677888),
    'all rows': (3446, 2783, 22, 0.76968),
}
