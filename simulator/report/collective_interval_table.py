"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 210fe27 from the
leave-one-system-out predictions of 125 sweeps of 39 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2802530534767977, 0.7776141547995231, 22, 2106),
    'across nodes, < 64 KiB': (-0.3439331422059556, 0.45334491122504444, 21, 619),
    'across nodes, >= 1 MiB': (-0.10863702667491672, 0.21906251403264848, 31, 899),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 5, 30),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.09999217164697739, 0.18612404507171632, 9, 3315),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2106, 1753, 22, 0.768253),
    'across nodes, < 64 KiB': (619, 483, 21, 0.789343),
    'across nodes, >= 1 MiB': (899, 653, 31, 0.790578),
    'one node, 64 KiB-1 MiB': (30, 22, 5, 0.633333),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (3315, 3225, 9, 0.73641),
    'all rows': (7039, 6186, 36, 0.78918),
}
