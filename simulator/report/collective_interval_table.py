"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 71cd33b from the
leave-one-system-out predictions of 77 sweeps of 21 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2915128752609438, 0.7407684468956798, 14, 2052),
    'across nodes, < 64 KiB': (-0.410349974765142, 0.8446771486416053, 14, 482),
    'across nodes, >= 1 MiB': (-0.17607216258270636, 0.3657806752862225, 17, 633),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.168345484894163, 0.08921287107672725, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2052, 1647, 14, 0.798438),
    'across nodes, < 64 KiB': (482, 369, 14, 0.750097),
    'across nodes, >= 1 MiB': (633, 478, 17, 0.790293),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 104, 5, 0.677888),
    'all rows': (3399, 2665, 20, 0.78106),
}
