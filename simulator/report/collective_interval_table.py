"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 4472e04 from the
leave-one-system-out predictions of 85 sweeps of 24 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.23924320149565403, 0.5984368815971317, 15, 2056),
    'across nodes, < 64 KiB': (-0.39620430208435486, 0.8408133808219673, 15, 495),
    'across nodes, >= 1 MiB': (-0.11373079807021926, 0.2649521497252032, 20, 695),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.07165964163280072, 0.09313257453359607, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2056, 1673, 15, 0.764306),
    'across nodes, < 64 KiB': (495, 400, 15, 0.769418),
    'across nodes, >= 1 MiB': (695, 519, 20, 0.793242),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 111, 5, 0.780162),
    'all rows': (3478, 2770, 23, 0.794562),
}
