"""Seeded fuzzing of everything a user hands clustersim: scenarios, profiles and overlays,
``collective`` arguments, nccl-tests logs and Kineto traces.

Each case is a command line over files made from a bundled example by a few random mutations
(a key set to a nasty value, a key dropped, renamed or added, the YAML text cut or garbled, a
log field made NaN, a trace event given the wrong types). The contract every case is held to:
exit 0 or 2, never a traceback or an "internal error", and no non-finite number in any output.

The cases run in one child process (``python -m tests.fuzz_inputs``) under an address-space
limit and a per-case alarm, so a case that would use gigabytes or spin forever fails as itself
instead of taking the machine with it. ``tests/unit/test_fuzz_inputs.py`` runs a fast default
and a long ``slow`` run.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import math
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CATEGORIES = ("scenario", "profile", "collective", "nccl_log", "kineto")

# Values a user (or a broken tool) can put where a number, flag or name was expected.
NASTY: tuple[Any, ...] = (
    True, False, None, 0, -1, 1, 2, 3, 7, 8, 64, 2 ** 31, 2 ** 63, 10 ** 6, 10 ** 12, 10 ** 40,
    0.5, 8.0, -0.0, 1e-300, 1e300, float("inf"), float("-inf"), float("nan"), "", "8", "1e3", "x" * 300,
    "auto", "dgx-h100", "../../etc/passwd", [], [1, 2], {}, {"a": 1}, "bf16", "fp8", "ring",
)
_NUMBER_TEXT = ("nan", "inf", "-inf", "-1", "0", "1e308", "99999999999999999999999", "abc", "", "N/A", "1.5.2")


def _paths(tree: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every key path of a nested mapping (list items by index)."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _parent(tree: Any, path: tuple) -> Any:
    for p in path[:-1]:
        tree = tree[p]
    return tree


def mutate_tree(rng: random.Random, tree: dict, extra_keys: tuple[str, ...] = ()) -> dict:
    """One to three structural mutations of a mapping."""
    tree = copy.deepcopy(tree)
    for _ in range(rng.randint(1, 3)):
        paths = list(_paths(tree))
        if not paths:
            break
        path = rng.choice(paths)
        parent = _parent(tree, path)
        key = path[-1]
        action = rng.random()
        if action < 0.55:
            parent[key] = rng.choice(NASTY)
        elif action < 0.65 and isinstance(parent, dict):
            del parent[key]
        elif action < 0.75 and isinstance(parent, dict) and isinstance(key, str):
            parent[key[:-1] + rng.choice("sx_") if key else "x"] = parent.pop(key)  # a typo
        elif action < 0.85 and isinstance(parent, dict):
            parent[rng.choice(extra_keys or ("unknown_key",))] = rng.choice(NASTY)
        elif isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = parent[key] * rng.choice((10 ** 6, -1, 0.5, 1e-9, 10 ** 30))
        else:
            parent[key] = rng.choice(NASTY)
    return tree


def _dump(tree: Any) -> str:
    # allow_unicode keeps the 300-char names as text; yaml writes .nan/.inf for float specials
    return yaml.safe_dump(tree, sort_keys=False, allow_unicode=True)


def mutate_text(rng: random.Random, text: str) -> bytes:
    """A text-level mutation: cut, garbled bytes, duplicated or dropped lines, deep nesting, aliases."""
    data = text.encode()
    action = rng.randrange(7)
    if action == 0:
        return data[: rng.randrange(len(data) + 1)]
    if action == 1:
        i = rng.randrange(len(data) + 1)
        return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[i:]
    lines = text.splitlines(keepends=True)
    if action == 2 and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif action == 3 and lines:
        del lines[rng.randrange(len(lines))]
    elif action == 4:
        depth = rng.choice((10, 100, 1000, 5000))
        lines.append(f"deep: {'[' * depth}{']' * depth}\n")
    elif action == 5:
        lines.append('bomb: &a0 ["x","x","x","x","x","x","x","x","x"]\n')
        for i in range(1, rng.randint(2, 9)):
            lines.append(f"b{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n")
    else:
        lines.append(f"{rng.choice(('nodes', 'name', 'base', 'gpu'))}: {rng.choice(_NUMBER_TEXT)}\n")
    return "".join(lines).encode()


# --- case generators: each returns (argv, files written) ---------------------------------------

def _quick() -> dict:
    doc = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 2
    return doc


def case_scenario(rng: random.Random, tmp: Path) -> list[str]:
    path = tmp / "scn.yaml"
    base = _quick()
    if rng.random() < 0.8:
        doc = mutate_tree(rng, base, extra_keys=("nodez", "paralel", "moe", "tp"))
        path.write_text(_dump(doc))
    else:
        path.write_bytes(mutate_text(rng, _dump(base)))
    if rng.random() < 0.3:
        return ["run", str(path), "--json", str(tmp / "out.json")]
    return ["check", str(path)]


def case_profile(rng: random.Random, tmp: Path) -> list[str]:
    from simulator.config.hardware import PROFILE_DIR

    name = rng.choice(sorted(p.stem for p in PROFILE_DIR.glob("*.yaml")))
    overlay = {"base": name}
    full = yaml.safe_load((PROFILE_DIR / f"{name}.yaml").read_text())
    for path in rng.sample(list(_paths(full)), k=min(2, len(list(_paths(full))))):
        node = overlay
        for p in path[:-1]:
            if isinstance(p, int):
                break
            node = node.setdefault(p, {}) if isinstance(node, dict) else node
        if isinstance(path[-1], str) and isinstance(node, dict):
            node[path[-1]] = rng.choice(NASTY)
    if rng.random() < 0.4:
        from simulator.config.nccl_overrides import KEYS

        key = rng.choice(sorted(KEYS))
        if rng.random() < 0.3:
            key = key.replace("_us", "_uss").replace(".ll", ".lll", 1)
        overlay["nccl"] = {key: rng.choice(NASTY)}
    if rng.random() < 0.15:
        overlay["base"] = rng.choice(("o.yaml", "./o.yaml", "nope", "x" * 300, 7))
    path = tmp / "o.yaml"
    if rng.random() < 0.85:
        path.write_text(_dump(overlay))
    else:
        path.write_bytes(mutate_text(rng, _dump(overlay)))
    if rng.random() < 0.5:
        scn = tmp / "scn.yaml"
        scn.write_text(_dump(_quick()))
        return ["check", str(scn), "--hardware", str(path)]
    return ["collective", "--hardware", str(path), "--op", "allreduce", "--ranks", "8", "--max-bytes", "1M"]


def case_collective(rng: random.Random, tmp: Path) -> list[str]:
    def pick(*values: Any) -> str:
        return str(rng.choice(values))

    argv = ["collective", "--hardware", pick("dgx-h100", "dgx-a100", "mi300x", "nope", "x" * 300),
            "--op", pick("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv",
                         "all_reduce", "allshuffle", ""),
            "--ranks", pick(1, 2, 8, 16, 24, 0, -8, 10 ** 6, 2 ** 63, "abc", "8.0", "1e3")]
    for flag, values in (("--gpus-per-node", (1, 4, 8, 0, 9, -1, "x")),
                         ("--min-bytes", (1, 8, "1K", "1M", 0, -5, "1e3", "12Q", "99999999999999999999G")),
                         ("--max-bytes", ("1K", "1M", "64M", "8G", "1P", 0, "-1")),
                         ("--step-factor", (2, 4, 1, 0, -2, "x", 10 ** 20)),
                         ("--algo", ("ring", "tree", "nvls", "nvls_tree", "direct", "p2p", "bogus")),
                         ("--proto", ("ll", "ll128", "simple", "bogus")),
                         ("--dtype", ("float", "bfloat16", "half", "int8", "complex128"))):
        if rng.random() < 0.35:
            argv += [flag, pick(*values)]
    if rng.random() < 0.2:
        argv += ["--json", str(tmp / rng.choice(("out.json", "missing-dir/out.json", "")))]
    return argv


QUICK = False  # --quick: only the one-node H100 logs, whose fits take a second (the fast default)


def case_nccl_log(rng: random.Random, tmp: Path) -> list[str]:
    # Logs of at most 128 ranks: the case is about reading and refusing rows, and a calibration
    # fit on a 512- or 2,048-rank sweep alone takes minutes of simulation on two cores.
    logs = sorted(p for p in (FIXTURES / "nccl_logs").glob("h100x8_*_1node.txt" if QUICK else "*.txt")
                  if int(re.search(r"x(\d+)_", p.name).group(1)) <= 128)
    text = rng.choice(logs).read_text()
    lines = text.splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")]
    for _ in range(rng.randint(1, 4)):
        if not rows:
            break
        i = rng.choice(rows)
        fields = lines[i].split()
        j = rng.randrange(len(fields))
        fields[j] = rng.choice(_NUMBER_TEXT)
        lines[i] = "  " + "  ".join(fields) + "\n"
    data = "".join(lines).encode()
    if rng.random() < 0.3:
        data = mutate_text(rng, data.decode(errors="replace"))
    path = tmp / "log.txt"
    path.write_bytes(data)
    return ["calibrate", str(path), "--hardware", "dgx-h100", "-o", str(tmp / "fit.yaml")]


def case_kineto(rng: random.Random, tmp: Path) -> list[str]:
    name = rng.choice(("gpu_style_trace.json", "cpu_gloo_trace.json"))
    data = json.loads((FIXTURES / "kineto" / name).read_text())
    events = data["traceEvents"]
    for _ in range(rng.randint(1, 6)):
        e = rng.choice(events)
        if not isinstance(e, dict):
            continue
        target = e.setdefault("args", {}) if rng.random() < 0.5 and isinstance(e.get("args"), dict) else e
        keys = list(target) or ["ts"]
        key = rng.choice(keys + ["ts", "dur", "Input Dims", "In msg nelems", "Group size"])
        target[key] = rng.choice(NASTY)
    if rng.random() < 0.1:
        data["distributedInfo"] = rng.choice(NASTY)
    text = json.dumps(data)  # NaN/Infinity literals, as a broken exporter would write
    path = tmp / "trace.json"
    if rng.random() < 0.15:
        path.write_bytes(mutate_text(rng, text))
    else:
        path.write_text(text)
    if rng.random() < 0.5:
        scn = tmp / "scn.yaml"
        scn.write_text(_dump(_quick()))
        return ["compare-trace", str(scn), str(path), "--json", str(tmp / "cmp.json")]
    return ["calibrate", str(path), "--hardware", "dgx-h100", "-o", str(tmp / "fit.yaml")]


GENERATORS: dict[str, Callable[[random.Random, Path], list[str]]] = {
    "scenario": case_scenario, "profile": case_profile, "collective": case_collective,
    "nccl_log": case_nccl_log, "kineto": case_kineto,
}

# --- the contract -------------------------------------------------------------------------------

_NON_FINITE_TEXT = re.compile(r"(?<![\w.])(nan|inf|-inf|Infinity|-Infinity|NaN)(?![\w.])")


def _non_finite_in(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite_in(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_non_finite_in(v) for v in value)
    return False


def output_problems(tmp: Path, stdout: str) -> list[str]:
    """Non-finite numbers in what a command wrote: its JSON and YAML files and its table."""
    out = []
    for f in tmp.iterdir():
        if f.suffix == ".json" and f.name not in ("trace.json",) and f.is_file():
            try:
                doc = json.loads(f.read_text(), parse_constant=lambda c: float("nan"))
            except ValueError as exc:
                out.append(f"{f.name}: not JSON ({exc})")
                continue
            if _non_finite_in(doc):
                out.append(f"{f.name}: non-finite number")
        elif f.name == "fit.yaml" and f.is_file():
            if _non_finite_in(yaml.safe_load(f.read_text())):
                out.append("fit.yaml: non-finite number")
    table = "\n".join(line for line in stdout.splitlines() if not line.startswith("#"))
    if _NON_FINITE_TEXT.search(table):
        out.append(f"stdout: non-finite number: {_NON_FINITE_TEXT.search(table).group(0)!r}")
    return out


class _Timeout(BaseException):  # not caught as an internal error by the CLI
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def run_case(category: str, seed: int, case_timeout_s: int) -> dict[str, Any]:
    """Generate and run one case in this process; the result the contract is checked on."""
    from simulator.cli import main

    rng = random.Random(f"{category}:{seed}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        argv = GENERATORS[category](rng, tmp)
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(case_timeout_s)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc: int | str = main(argv)
        except _Timeout:
            rc = "timeout"
        except BaseException:  # noqa: BLE001 - anything escaping main is a failure of the contract
            rc = "escaped: " + traceback.format_exc(limit=3)[-400:]
        finally:
            signal.alarm(0)
        seconds = time.perf_counter() - start
        problems = output_problems(tmp, out.getvalue()) if rc == 0 else []
    stderr = err.getvalue()
    return {"category": category, "seed": seed, "argv": [a[:80] for a in argv], "rc": rc, "seconds": round(seconds, 2),
            "traceback": "Traceback" in stderr, "internal": "internal error" in stderr,
            "stderr_chars": len(stderr), "stderr": stderr[-300:], "problems": problems,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def failures(results: list[dict[str, Any]], max_stderr_chars: int = 20_000) -> list[str]:
    """The cases that broke the contract, one line each."""
    bad = []
    for r in results:
        why = []
        if r["rc"] not in (0, 2):
            why.append(f"exit {r['rc']}")
        if r["traceback"] or r["internal"]:
            why.append("traceback / internal error")
        if r["stderr_chars"] > max_stderr_chars:
            why.append(f"{r['stderr_chars']:,} characters on stderr")
        why += r["problems"]
        if why:
            bad.append(f"{r['category']} seed {r['seed']}: {'; '.join(why)}: {' '.join(r['argv'])} :: {r['stderr'][-200:]}")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run fuzz cases; print one JSON result per line.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", type=int, default=10, help="cases per category")
    ap.add_argument("--categories", nargs="*", default=list(CATEGORIES))
    ap.add_argument("--memory-mb", type=int, default=4096, help="address-space limit of this process")
    ap.add_argument("--case-timeout", type=int, default=60)
    ap.add_argument("--quick", action="store_true", help="only the inputs that are quick to process")
    args = ap.parse_args(argv)
    global QUICK
    QUICK = args.quick
    limit = args.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import warnings

    warnings.simplefilter("ignore")  # numpy's overflow warnings are not the contract
    for category in args.categories:
        for i in range(args.cases):
            print(json.dumps(run_case(category, args.seed * 100_000 + i, args.case_timeout)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
