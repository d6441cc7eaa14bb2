"""The README's first code block is the whole setup; .ci/run must run exactly those commands."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def first_code_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"```[a-z]*\n(.*?)```", text, re.S)
    assert m, "README.md has no fenced code block"
    return [line.strip() for line in m.group(1).splitlines() if line.strip()]


def test_readme_setup_is_two_commands_install_run_then_test():
    lines = first_code_block()
    assert len(lines) == 2
    assert "pip install" in lines[0] and "clustersim run scenarios/" in lines[0]
    assert "pytest" in lines[1]
    scenario = re.search(r"clustersim run (\S+)", lines[0]).group(1)
    assert (ROOT / scenario).is_file()


def test_ci_runs_the_readme_commands_verbatim():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    for command in first_code_block():
        assert command in ci


def test_readme_names_the_fast_default_for_contributors():
    """A contributor runs the fast subset; CI (the setup block) runs everything."""
    text = (ROOT / "README.md").read_text()
    contributing = text.split("## Contributing", 1)
    assert len(contributing) == 2, "README.md has no Contributing section"
    assert 'python -m pytest -m "not slow"' in contributing[1]
    assert first_code_block()[1] == "python -m pytest -n auto --dist loadfile"  # CI: the whole suite, slow included
