"""End-to-end validation of ``clustersim run`` against published, measured training runs.

``python -m simulator.e2e_validation [--out docs/] [--source KEY ...]`` maps selected rows of
``data/e2e/*.csv`` (see ``data/e2e/INDEX.md``) to scenarios built in code, simulates each, and
writes ``docs/validation-e2e.md``: a leave-one-source-out headline (per source and per regime:
median, mean and max |error|, signed median), then one table per source with predicted vs
measured, the error in-sample and held out, and the caveats.

Like with like: every row is compared in the metric its source prints, with that source's FLOP
convention. A step time is compared directly; tokens/s/GPU is the global batch's tokens over
step time and GPUs; TFLOP/s numbers are recomputed from the predicted step time with the
source's own formula (Megatron's eq. 3 of arXiv:2104.04473, with the recompute factor 4 for
"hardware" TFLOP/s, without it for Megatron-Core's model TFLOP/s). The error is always
``predicted throughput / measured throughput - 1`` (= measured step / predicted step - 1), so a
positive error means the simulator is optimistic.

Modules: ``rows`` reads the CSVs, ``scenarios`` builds scenario mappings and the software stacks,
``sources`` selects and maps each source's rows to :class:`~.sources.Case` s, ``scoring`` runs a
case and computes its error (``shared`` lets several processes, the test suite's workers, simulate
each scenario once between them), ``gemm_fit`` fits the GEMM derate on the single-node rows,
``loso`` re-scores every row with the derates fitted without its source (the page's headline),
``report`` and ``findings`` write the page, ``__main__`` is the command line.
"""
