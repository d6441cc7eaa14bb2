"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit cdb50c1 from the
leave-one-system-out predictions of 88 sweeps of 24 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.36803869471515105, 0.7751562990976304, 15, 2068),
    'across nodes, < 64 KiB': (-0.3536328446789243, 0.8365244857161722, 15, 529),
    'across nodes, >= 1 MiB': (-0.13701877164757614, 0.3088027718475128, 20, 728),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.17247503933363234, 0.08921287107672725, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2068, 1717, 15, 0.735035),
    'across nodes, < 64 KiB': (529, 423, 15, 0.763347),
    'across nodes, >= 1 MiB': (728, 581, 20, 0.795833),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 104, 5, 0.677888),
    'all rows': (3557, 2892, 23, 0.780809),
}
