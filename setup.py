"""Build step of the package (the metadata is in pyproject.toml).

The repository's top-level ``hardware_profiles/``, ``scenarios/`` and ``data/`` folders are the
source of truth. Building the package (a wheel, ``pip install .``, ``--user``, ``--target``)
copies them into it as ``simulator/bundled/<folder>``, where :func:`simulator.files.bundled_dir`
finds them through ``importlib.resources`` wherever pip put the package; a checkout or an
editable install reads the folders in place, so nothing is duplicated in git.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

# Folder -> the files of it the package ships (everything the modules and `clustersim scenarios` read).
BUNDLED = {
    "hardware_profiles": ("*.yaml",),
    "scenarios": ("*.yaml", "plans/*.yaml"),
    "data/nccl": ("*.csv", "INDEX.md"),
    "data/e2e": ("*.csv", "INDEX.md"),
    "data/kernels": ("*.csv", "INDEX.md"),
}


class BuildPyWithBundledData(build_py):
    """build_py, plus the bundled folders copied under simulator/bundled/ in the build tree."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the source tree
        root = Path(__file__).resolve().parent
        for folder, patterns in BUNDLED.items():
            for pattern in patterns:
                for src in sorted((root / folder).glob(pattern)):
                    dest = Path(self.build_lib) / "simulator" / "bundled" / src.relative_to(root)
                    self.mkpath(str(dest.parent))
                    self.copy_file(str(src), str(dest))


setup(cmdclass={"build_py": BuildPyWithBundledData})
