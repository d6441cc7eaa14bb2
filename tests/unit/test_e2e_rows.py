"""Reading a CSV row's precision (simulator/e2e_validation/rows.py ``parse_precision``): the
leading word of ``prec=``, not the commentary after it."""

from __future__ import annotations

import pytest

from simulator.e2e_validation.rows import parse_precision


@pytest.mark.parametrize("notes,dtype", [
    ('prec=fp16 (implied: later section switches to bf16 optimizer "compared to fp16"); mem=56GB', "fp16"),
    ("prec=bf16 with new BF16 optimizer (fp32 grad accumulation); x", "bf16"),
    ("prec=amp_bf16 (MP mode DEFAULT)", "bf16"),
    ("prec=bf16+fp8; x", None),
    ("prec=FP8-CS", None),
    ("prec=amp", None),
    ("no precision here", None),
])
def test_leading_word_decides(notes, dtype):
    assert parse_precision({"notes": notes}) == dtype
