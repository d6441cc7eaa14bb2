"""`python -m simulator` is the same as the `clustersim` command."""

from simulator.cli import main

raise SystemExit(main())
