"""How long things take: pure cost functions (no simpy, no networkx).

``nccl_tuner`` reproduces NCCL's own cost model (algorithm/protocol choice and per-call
latency) over the tables of ``nccl_constants`` and the communicator of ``nccl_graph``;
``collectives`` decomposes a collective into flows over the topology's routes.
"""
