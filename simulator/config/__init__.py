"""Configuration: the only layer that parses YAML. Pydantic models, unknown keys rejected."""
