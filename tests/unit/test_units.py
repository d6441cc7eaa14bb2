import pytest

from simulator import units


@pytest.mark.parametrize(
    "text,expected",
    [("8", 8), ("1K", 1024), ("32M", 32 * 1024**2), ("8G", 8 * 1024**3), ("4k", 4096), ("2MiB", 2 * 1024**2), (16, 16)],
)
def test_parse_size_accepts_nccl_tests_suffixes(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.5", "-3", "4X", "1.3K"])
def test_parse_size_rejects_garbage(text):
    with pytest.raises(ValueError, match="byte count|whole number"):
        units.parse_size(text)


def test_format_size_inverts_parse_size():
    for n in (1, 1000, 1024, 3 * 1024**2, 8 * 1024**3):
        assert units.parse_size(units.format_size(n)) == n


def test_unit_conversions_are_si():
    assert units.GBps(450) == 450e9
    assert units.Gbps(400) == 50e9  # a 400 Gb/s NIC moves 50 GB/s
    assert units.us(25) == pytest.approx(25e-6)
