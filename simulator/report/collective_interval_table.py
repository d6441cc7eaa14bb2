"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:
do not edit.

Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit b3ef9a3 from the
leave-one-system-out predictions of 132 sweeps of 44 systems in data/nccl
(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of
ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing
the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems
of the fraction covered) of the 80% band, nested: each system against the other systems' band.
"""

BANDS = {
    'across nodes, 64 KiB-1 MiB': (-0.2802530534767977, 1.0479087867374162, 25, 2126),
    'across nodes, < 64 KiB': (-0.3439331422059556, 0.496555697060611, 24, 677),
    'across nodes, >= 1 MiB': (-0.11754644983311094, 0.21414027506425068, 36, 973),
    'one node, 64 KiB-1 MiB': (-0.3750372499843534, 0.42152641751160697, 5, 30),
    'one node, < 64 KiB': (-0.14406396512441566, 0.9276920799543269, 4, 70),
    'one node, >= 1 MiB': (-0.09999217164697739, 0.18612404507171632, 9, 3315),
}

COVERAGE = {
    'across nodes, 64 KiB-1 MiB': (2126, 1815, 25, 0.779229),
    'across nodes, < 64 KiB': (677, 531, 24, 0.789859),
    'across nodes, >= 1 MiB': (973, 708, 36, 0.795194),
    'one node, 64 KiB-1 MiB': (30, 22, 5, 0.633333),
    'one node, < 64 KiB': (70, 50, 4, 0.615385),
    'one node, >= 1 MiB': (3315, 3225, 9, 0.73641),
    'all rows': (7191, 6351, 41, 0.798046),
}
