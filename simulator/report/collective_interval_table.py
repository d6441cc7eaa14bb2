"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 4ccf54c from the
leave-one-system-out predictions of 92 sweeps of 27 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.29914130820493245, 0.5479666261734595, 16, 2076),
    'across nodes, < 64 KiB': (-0.41518925836474635, 0.7893799041570266, 16, 549),
    'across nodes, >= 1 MiB': (-0.14463004666096033, 0.19489103836232569, 22, 763),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.07165964163280072, 0.09313257453359607, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2076, 1672, 16, 0.7639),
    'across nodes, < 64 KiB': (549, 437, 16, 0.771082),
    'across nodes, >= 1 MiB': (763, 561, 22, 0.794439),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 111, 5, 0.780162),
    'all rows': (3620, 2848, 25, 0.796867),
}
