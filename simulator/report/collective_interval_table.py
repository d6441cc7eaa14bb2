"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 1552614 from the
leave-one-system-out predictions of 62 sweeps of 21 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-1.1972209000465686, 0.6691718487774241, 14, 2052),
    'across nodes, < 64 KiB': (-0.9879898093617254, 0.6734410044594049, 14, 482),
    'across nodes, >= 1 MiB': (-0.3833098977813384, 0.6494755469784628, 17, 483),
    'one node, 64 KiB-1 MiB': (-0.5561596150582614, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.19574762025792414, 0.5062111990221612, 4, 70),
    'one node, >= 1 MiB': (-0.168345484894163, 0.08921287107672725, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2052, 2009, 14, 0.729911),
    'across nodes, < 64 KiB': (482, 343, 14, 0.783283),
    'across nodes, >= 1 MiB': (483, 340, 17, 0.783561),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 105, 5, 0.692174),
    'all rows': (3249, 2864, 20, 0.791023),
}
