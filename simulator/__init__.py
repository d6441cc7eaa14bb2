"""clustersim: a discrete-event simulator of distributed LLM training."""

__version__ = "0.1.0"
