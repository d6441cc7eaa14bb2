"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 8156889 from the
leave-one-system-out predictions of 88 sweeps of 24 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2802530534767977, 0.5984368815971317, 15, 2068),
    'across nodes, < 64 KiB': (-0.39620430208435486, 0.8325188341277162, 15, 529),
    'across nodes, >= 1 MiB': (-0.1121588706312976, 0.21896689128071883, 20, 728),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.07165964163280072, 0.09313257453359607, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2068, 1673, 15, 0.759757),
    'across nodes, < 64 KiB': (529, 421, 15, 0.763146),
    'across nodes, >= 1 MiB': (728, 550, 20, 0.792522),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 111, 5, 0.780162),
    'all rows': (3557, 2822, 23, 0.793072),
}
