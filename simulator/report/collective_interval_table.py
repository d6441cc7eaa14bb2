"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit b3ab1f1 from the
leave-one-system-out predictions of 147 sweeps of 45 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2889707747294549, 1.0724977450134234, 25, 2126),
    'across nodes, < 64 KiB': (-0.3519068638632489, 0.496555697060611, 24, 677),
    'across nodes, >= 1 MiB': (-0.10749790477461477, 0.22769045328027665, 37, 1088),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 5, 30),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.09999217164697739, 0.18612404507171632, 9, 3315),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2126, 1817, 25, 0.794229),
    'across nodes, < 64 KiB': (677, 526, 24, 0.790272),
    'across nodes, >= 1 MiB': (1088, 796, 37, 0.79507),
    'one node, 64 KiB-1 MiB': (30, 22, 5, 0.633333),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (3315, 3225, 9, 0.73641),
    'all rows': (7306, 6436, 42, 0.798755),
}
