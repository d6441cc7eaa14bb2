"""Calibration and validation: measured data (nccl-tests sweeps, traces) against predictions.

``measured`` reads the bundled nccl-tests CSVs (data/nccl/); ``collective_validation`` predicts
every sweep it can model and writes docs/validation-collectives.md; ``plots`` draws the figures.
"""
