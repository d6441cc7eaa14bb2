"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 408eb47 from the
leave-one-system-out predictions of 93 sweeps of 28 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.28783753660301736, 0.5546695997033124, 16, 2076),
    'across nodes, < 64 KiB': (-0.3769422427784389, 0.8062898175899779, 16, 549),
    'across nodes, >= 1 MiB': (-0.14463004666096033, 0.13893937305763673, 22, 763),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.07165964163280072, 0.24672092707689075, 6, 149),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2076, 1669, 16, 0.787337),
    'across nodes, < 64 KiB': (549, 428, 16, 0.758167),
    'across nodes, >= 1 MiB': (763, 559, 22, 0.79279),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (149, 131, 6, 0.74008),
    'all rows': (3631, 2854, 26, 0.766181),
}
