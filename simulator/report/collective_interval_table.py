"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 42653a4 from the
leave-one-system-out predictions of 101 sweeps of 34 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.30250888481043836, 0.5908254521241193, 20, 2092),
    'across nodes, < 64 KiB': (-0.3678797162536279, 0.6034313107402326, 20, 601),
    'across nodes, >= 1 MiB': (-0.12264554455135768, 0.21414027506425068, 27, 829),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.061226574761423055, 0.17044199575182928, 7, 3221),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2092, 1740, 20, 0.774193),
    'across nodes, < 64 KiB': (601, 453, 20, 0.772981),
    'across nodes, >= 1 MiB': (829, 619, 27, 0.792133),
    'one node, 64 KiB-1 MiB': (24, 17, 4, 0.5625),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (3221, 3154, 7, 0.768907),
    'all rows': (6837, 6033, 32, 0.783965),
}
