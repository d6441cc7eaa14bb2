"""Sub-commands of the CLI, one module each (part of the CLI layer)."""
