"""End-to-end validation of ``clustersim run`` against published, measured training runs.

``python -m simulator.e2e_validation [--out docs/] [--source KEY] [--fit-gemm] [--extra FILE]``
writes (or prints) ``docs/validation-e2e.md``; see the package docstring. With ``--out`` and every
source it also writes ``simulator/report/step_interval_table.py``, the step-time interval table of
``clustersim run`` (:mod:`simulator.e2e_validation.intervals`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.e2e_validation.gemm_fit import fit_gemm_scale
from simulator.e2e_validation.loso import leave_one_source_out, parallel_simulator
from simulator.e2e_validation.memory import render_memory_section
from simulator.e2e_validation.report import render_findings, render_markdown
from simulator.e2e_validation.scoring import median_abs_error, run_cases
from simulator.e2e_validation.sources import SOURCES, cases, is_fit_case


def main(argv: list[str] | None = None) -> int:
    # prog: the documented invocation (argparse would print "__main__.py")
    ap = argparse.ArgumentParser(prog="python -m simulator.e2e_validation", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for validation-e2e.md (default: print)")
    ap.add_argument("--source", action="append", choices=[s.key for s in SOURCES], metavar="KEY",
                    help=f"only these sources (repeatable): {', '.join(s.key for s in SOURCES)}")
    ap.add_argument("--fit-gemm", action="store_true",
                    help="fit the GEMM-curve factor per profile on the 8-GPU rows and print it (writes nothing)")
    ap.add_argument("--extra", type=Path, default=None, help="append this markdown file (findings) to the doc")
    ap.add_argument("--jobs", type=int, default=1, help="simulate in this many worker processes (default 1)")
    args = ap.parse_args(argv)
    srcs = [s for s in SOURCES if not args.source or s.key in args.source]
    if args.fit_gemm:
        fit = [c for c in cases(srcs) if is_fit_case(c)]
        for prof in sorted({c.scenario["hardware"] for c in fit}):
            mine = [c for c in fit if c.scenario["hardware"] == prof]
            scale, rs = fit_gemm_scale(prof, mine)
            print(f"{prof}: GEMM curve x {scale:.3f} on {len(mine)} rows; median |error| "
                  f"{100 * median_abs_error(rs):.1f}%")
        return 0
    results = list(run_cases(cases(srcs), progress=True, jobs=max(1, args.jobs)))
    loso = leave_one_source_out(results, parallel_simulator(max(1, args.jobs)))
    text = render_markdown(results, srcs, loso)
    text += render_memory_section()  # memory needs no replay: a closed form per row
    text += render_findings(loso, srcs)
    if args.extra is not None:
        text += "\n" + args.extra.read_text()
    if args.out is None:
        print(text)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "validation-e2e.md").write_text(text)
        print(f"wrote {args.out / 'validation-e2e.md'}")
        if not args.source:  # the interval table of `clustersim run` comes from every source's rows
            from simulator.e2e_validation.intervals import TABLE, regime_rows, render_table

            TABLE.write_text(render_table(regime_rows(loso)))
            print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
