"""Cross-validation targets of docs/validation-calibration.md on the systems it claims: after
calibrating on part of a system's measured sweeps, the held-out rows are predicted within a
median |busbw error| of 5 % (sizes >= 1 MiB) and 10 % (all sizes)."""

from __future__ import annotations

import pytest

from simulator.calibration.cross_validation import ASSERTED, TARGET_ALL, TARGET_LARGE, cross_validate, systems


@pytest.fixture(scope="module")
def measured():
    by_system, _ = systems()
    return by_system


@pytest.mark.slow
@pytest.mark.parametrize("system", sorted(ASSERTED))
def test_cross_validation_meets_target(measured, system):
    if system not in measured:
        pytest.skip(f"{system}: profile or sweeps not bundled")
    results = {r.split: r for r in cross_validate(system, measured[system])}
    for split in ASSERTED[system]:
        r = results[split]
        assert r.after_all is not None and r.after_all <= TARGET_ALL, (system, split, r.after_all)
        if r.after_large is not None:
            assert r.after_large <= TARGET_LARGE, (system, split, r.after_large)
        # Calibration must not make the held-out predictions worse overall.
        assert r.after_all <= r.before_all + 0.01, (system, split)
    # The calibrated profile's 80% interval (its fit's residual band) covers most held-out sizes of
    # the sweeps it was fitted on (doc: 71-84% on these systems); not asserted for a held-out
    # collective, where the doc shows it too narrow.
    sizes = results["sizes (fit even, predict odd)"]
    assert sizes.interval_rows and sizes.covered / sizes.interval_rows >= 0.6, (system, sizes.covered)
