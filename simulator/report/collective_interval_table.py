"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 944fd62 from the
leave-one-system-out predictions of 92 sweeps of 27 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.29298712468147425, 0.5546695997033124, 16, 2076),
    'across nodes, < 64 KiB': (-0.37746680371670194, 0.8062898175899779, 16, 549),
    'across nodes, >= 1 MiB': (-0.13701877164757614, 0.14542861373020038, 22, 763),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.07165964163280072, 0.09313257453359607, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2076, 1658, 16, 0.77679),
    'across nodes, < 64 KiB': (549, 419, 16, 0.753353),
    'across nodes, >= 1 MiB': (763, 563, 22, 0.795569),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 111, 5, 0.780162),
    'all rows': (3620, 2818, 25, 0.789511),
}
