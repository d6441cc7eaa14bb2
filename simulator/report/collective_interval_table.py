"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 454d0a7 from the
leave-one-system-out predictions of 62 sweeps of 21 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-1.0603816416707534, 0.9104605242034713, 14, 2052),
    'across nodes, < 64 KiB': (-0.9468055967950684, 0.48184816238335204, 14, 482),
    'across nodes, >= 1 MiB': (-0.22100985535336437, 0.3613459558481519, 17, 483),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 4, 24),
    'one node, < 64 KiB': (-0.14406396512441566, 0.5062111990221612, 4, 70),
    'one node, >= 1 MiB': (-0.168345484894163, 0.08921287107672725, 5, 138),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2052, 2001, 14, 0.770089),
    'across nodes, < 64 KiB': (482, 314, 14, 0.779006),
    'across nodes, >= 1 MiB': (483, 334, 17, 0.792308),
    'one node, 64 KiB-1 MiB': (24, 16, 4, 0.5),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (138, 104, 5, 0.677888),
    'all rows': (3249, 2819, 20, 0.79326),
}
