"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit 41fd9e7 from the
leave-one-system-out predictions of 129 sweeps of 41 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2802530534767977, 0.8470332083097603, 24, 2122),
    'across nodes, < 64 KiB': (-0.34529736516350396, 0.5201566929171049, 23, 664),
    'across nodes, >= 1 MiB': (-0.1161631442513888, 0.2331355540250208, 33, 951),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 5, 30),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.09999217164697739, 0.18612404507171632, 9, 3315),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2122, 1792, 24, 0.791341),
    'across nodes, < 64 KiB': (664, 523, 23, 0.789986),
    'across nodes, >= 1 MiB': (951, 696, 33, 0.795049),
    'one node, 64 KiB-1 MiB': (30, 22, 5, 0.633333),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (3315, 3225, 9, 0.73641),
    'all rows': (7152, 6308, 38, 0.793967),
}
