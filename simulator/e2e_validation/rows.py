"""Reading the ground-truth CSVs of ``data/e2e/`` and parsing their fields."""

from __future__ import annotations

from pathlib import Path

from simulator.files import note_value, read_commented_csv

__all__ = ["note_value"]  # re-exported: the sources' builders read their rows' notes from here

Row = dict[str, str]


def read_rows(path: Path) -> list[Row]:
    """Rows of a ground-truth CSV, skipping its ``#`` provenance lines."""
    return read_commented_csv(path)


def parse_int(v: str, default: int = 0) -> int:
    v = (v or "").strip()
    return int(float(v)) if v else default


def parse_container_run(row: Row) -> tuple[str, str, int]:
    """(container, precision, GPUs) of a dgxc-benchmarking row measured under one NeMo container,
    from its source id ``dgxc-benchmarking-nemo<container>-<model>-<size>-<precision>-<gpus>``."""
    parts = row["source_id"].split("-")
    return parts[2].removeprefix("nemo"), parts[-2], int(parts[-1])


def parse_precision(row: Row) -> str | None:
    """``prec=...`` of the notes mapped to a dtype the simulator models (None: not modelled)."""
    notes = row["notes"].lower()
    if "prec=" not in notes:
        return None
    p = notes.split("prec=", 1)[1].split(";")[0].strip()
    # the leading word: what follows is commentary ("fp16 (implied: ... bf16 optimizer ...)")
    p = p.split()[0] if p else p
    if p.startswith(("bf16+fp8", "fp8", "mxfp8", "nvfp4", "fp32", "amp;", "amp ")) or p == "amp":
        return None
    if "bf16" in p:
        return "bf16"
    if "fp16" in p:
        return "fp16"
    return None


def parse_recompute(row: Row, default: str = "none") -> str:
    r = row["recompute"].lower()
    if r.startswith("full"):
        return "full"
    if r.startswith("selective") or r.startswith("recompute-activations"):
        return "selective"  # Megatron's --recompute-activations = selective granularity
    if r.startswith("none") or r == "no":
        return "none"
    return default


def parse_hardware(row: Row) -> str | None:
    g = row["gpu"].upper()
    if "H100" in g:
        return "dgx-h100"
    if "A100" in g and "40GB" not in g:
        return "dgx-a100"
    return None


def gpu_name(r: Row) -> str:
    """The row's GPU as the tables name it: "H100-SXM (DGX-H100)" -> "H100", "GB200 (GB200 NVL72)" -> "GB200"."""
    return r["gpu"].split()[0].split("-")[0]


# Blackwell systems by the row's GPU name: DGX B200 and B300 nodes; GB200 and GB300 NVL72 racks, trays
# of 4 GPUs in one 72-GPU NVLink domain.
BLACKWELL_SYSTEMS: dict[str, str] = {"B200": "dgx-b200", "B300": "dgx-b300", "GB200": "gb200-nvl72",
                                     "GB300": "gb300-nvl72"}


def parse_system(row: Row) -> str | None:
    """The profile of a row's system: :func:`parse_hardware`'s DGX H100 or A100, else a Blackwell
    system by its GPU name; None for the others."""
    return parse_hardware(row) or BLACKWELL_SYSTEMS.get(gpu_name(row).upper())


