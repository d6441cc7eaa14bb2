"""The node a run sees when it uses only the first N GPUs of every node of a profile.

A scenario's ``gpus_per_node: N`` (or ``clustersim collective --gpus-per-node``) describes a job
on part of each node: 2 or 4 GPUs of a DGX A100 (``CUDA_VISIBLE_DEVICES=0,1``, a cloud shape such
as GCP's a2-highgpu-4g). NCCL builds a communicator's topology from its own GPUs and every NIC of
the node (``ncclTopoGetSystem``), and the unused GPUs carry no traffic, so the run is the profile
with a node of N GPUs whose links are those the N GPUs own:

- NVSwitch: each GPU keeps its links into the switches, so its per-GPU NVLink bandwidth
  (``link_GBps``, ``links_per_gpu``) is unchanged; a multi-node NVLink domain (MNNVL) keeps its
  trays, with N GPUs each.
- Full mesh (xGMI, four-GH200 nodes): a GPU keeps its direct links to the N - 1 used peers at the
  same per-peer bandwidth and loses those to the unused ones (``links_per_gpu`` counts the links
  to used peers: 7 per MI300X on 8 GPUs, 1 per peer, becomes 3 on 4).
- PCIe: each GPU keeps its own x16 link to the host bridge.
- NICs: the NICs the used GPUs send through (``HardwareProfile.gpu_nics``: their rail-attached
  NICs; several GPUs sharing one NIC keep sharing it); the others idle. With several NICs per GPU
  (AWS p5: 4 EFA per H100) the used GPUs' share. Each kept NIC keeps its local GPU when that GPU
  is used, else the first used GPU sending through it (the nearest of the communicator's GPUs).
- Network: the switches are the same, so a leaf's uplinks keep their bandwidth; where the
  uplink is computed from the NICs below it (``fat_tree`` and ``dragonfly``, hardware/topology.py)
  the oversubscription is scaled by the NICs kept, down to 1 (no longer oversubscribed).

The profile keeps its name (its deployed constants and calibration apply), so everything built
from it (routes, NCCL's graph and tuner, collectives, memory) sees N GPUs per node.

A scenario's ``nodes_per_nvlink_domain: K`` describes a job on part of each multi-node NVLink domain
(MNNVL: a GB200 NVL72 rack of 18 trays): the scheduler gives it K consecutive nodes of every
domain it uses (Slurm's ``--segment=K`` with the topology/block plugin), so its domains are K
nodes wide and a collective between two segments crosses the InfiniBand fabric, as between racks.
Megatron-Bridge's performance scripts ask for it on every GB200 job (``scripts/performance/utils/
executors.py``: the job's node count up to 18 trays, else its largest divisor up to 18: 16 trays,
64 GPUs, per rack for a 256-GPU job), which keeps an EP group of 32 or 64 inside one rack.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

from simulator.config.hardware import HardwareProfile


def first_gpus_problem(profile: HardwareProfile, n: int) -> str | None:
    """Why a node of ``profile`` cannot be used as its first ``n`` GPUs, or None."""
    gpus = profile.node.gpus
    if not 1 <= n <= gpus:
        return f"expected 1 <= gpus_per_node <= {gpus} (the GPUs of a {profile.name} node), got {n}"
    return None


def first_gpus(profile: HardwareProfile, n: int) -> HardwareProfile:
    """``profile`` with nodes of its first ``n`` GPUs (module docstring); ``n`` = all: ``profile`` itself."""
    problem = first_gpus_problem(profile, n)
    if problem:
        raise ValueError(problem)
    node = profile.node
    g = node.gpus
    if n == g:
        return profile
    su, nics = node.scale_up, node.nics
    scale_up: dict[str, Any] = {}
    if su.kind == "mesh":
        per_peer = max(1, su.links_per_gpu // max(1, g - 1))
        scale_up["links_per_gpu"] = per_peer * max(1, n - 1)
    if su.domain_gpus is not None:
        scale_up["domain_gpus"] = su.domain_gpus // g * n
    data = profile.model_dump()
    data["node"] = {**data["node"], "gpus": n, "board_gpus": node.physical_gpus,
                    "scale_up": {**data["node"]["scale_up"], **scale_up}}
    if nics.gpu_paths is not None:
        data["node"]["nics"] = {**data["node"]["nics"], "gpu_paths": list(nics.gpu_paths[:n])}
    count = nics.count
    if nics.count > g:  # several NICs per GPU, aggregated per GPU: the used GPUs' share
        count = max(n, round(nics.count * n / g))
        data["node"]["nics"]["count"] = count
    so = profile.scale_out
    rails_before, rails_after = min(nics.count, g), min(count, n)
    if so.kind in ("fat_tree", "dragonfly") and rails_before and nics.count <= g:
        rails_after = len(set(profile.gpu_nics[:n]))
    if so.kind in ("fat_tree", "dragonfly") and rails_before:
        data["scale_out"] = {**data["scale_out"],
                             "oversubscription": max(1.0, so.oversubscription * rails_after / rails_before)}
    data["description"] = (f"{profile.description} " if profile.description else "") + f"(first {n} of {g} GPUs per node)"
    if nics.count == 0 or nics.count > g:
        return HardwareProfile.model_validate(data)
    return _with_kept_nics(profile, data, n)


# Orders of the kept NICs tried to reproduce the used GPUs' NICs (_with_kept_nics): 6! at most.
_MAX_ORDERS = 720


def _with_kept_nics(profile: HardwareProfile, data: dict[str, Any], n: int) -> HardwareProfile:
    """The derived profile whose NICs are those the first ``n`` GPUs send through
    (``profile.gpu_nics``), each GPU keeping its own. A NIC's local GPU stays when that GPU is
    used, else it is the first used GPU sending through it; the NICs keep their device order
    unless another order is the only one whose ``gpu_nics`` (NCCL's round robin over the GPUs
    without a local NIC) gives every used GPU its NIC (a Polaris node used as 3 GPUs)."""
    own = profile.gpu_nics[:n]
    kept = sorted(set(own))
    homes = {r: (profile.nic_local_gpus[r] if profile.nic_local_gpus[r] < n else own.index(r)) for r in kept}
    first: HardwareProfile | None = None
    for count, order in enumerate(permutations(kept)):
        if count >= _MAX_ORDERS:
            break
        nics = {**data["node"]["nics"], "count": len(order)}
        default_layout = list(order) == kept and all(homes[r] == -(-i * n // len(kept)) for i, r in enumerate(kept))
        nics["local_gpus"] = None if default_layout and profile.node.nics.local_gpus is None else [homes[r] for r in order]
        candidate = HardwareProfile.model_validate({**data, "node": {**data["node"], "nics": nics}})
        first = first or candidate
        index = {r: i for i, r in enumerate(order)}
        if candidate.gpu_nics == tuple(index[r] for r in own):
            return candidate
    assert first is not None
    return first


def domain_segment_problem(profile: HardwareProfile, k: int, nodes: int, key: str = "nodes_per_nvlink_domain",
                           job: str = "") -> str | None:
    """Why a job of ``nodes`` nodes cannot hold ``k`` consecutive nodes of each of ``profile``'s
    NVLink domains, or None; ``key`` spells the setting as the user gave it, ``job`` the job's size
    (default: ``nodes: N``)."""
    per_domain = profile.nodes_per_domain
    if profile.node.scale_up.domain_gpus is None or per_domain <= 1:
        return (f"{profile.name}'s NVLink domain is one node: {key} describes a multi-node "
                f"NVLink domain (node.scale_up.domain_gpus, as a GB200 NVL72 rack's)")
    if not 1 <= k <= per_domain:
        return f"expected 1 <= {key} <= {per_domain} (the nodes of one {profile.name} NVLink domain), got {k}"
    if nodes % k:
        return f"{job or f'nodes: {nodes}'} is not a whole number of segments of {key} = {k}"
    return None


def domain_segment(profile: HardwareProfile, k: int) -> HardwareProfile:
    """``profile`` with NVLink domains of ``k`` nodes (module docstring); ``k`` = the whole domain:
    ``profile`` itself."""
    if k == profile.nodes_per_domain:
        return profile
    data = profile.model_dump()
    node = data["node"]
    node["scale_up"] = {**node["scale_up"], "domain_gpus": k * profile.node.gpus if k > 1 else None}
    data["description"] = (f"{profile.description} " if profile.description else "") + f"({k} nodes of each NVLink domain)"
    return HardwareProfile.model_validate(data)
