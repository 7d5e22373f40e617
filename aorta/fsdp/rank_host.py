"""Where a rank runs on its host: hostname, the CPUs it may run on, their NUMA nodes and its GPU's NUMA node
(read from Linux's sysfs; no torch). A rank whose CPUs sit on another NUMA node than its GPU, or that shares
its CPUs with other ranks, launches slower: the evidence beside a straggler (issue 26).

Sources: ``os.sched_getaffinity(0)`` (the CPUs this process may run on), ``/sys/devices/system/node/node<N>/
cpulist`` (the CPUs of each NUMA node), ``/sys/bus/pci/devices/<domain:bus:dev.fn>/numa_node`` (the GPU's
node; -1 where the platform does not say).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from pathlib import Path

NODE_ROOT = Path("/sys/devices/system/node")
PCI_ROOT = Path("/sys/bus/pci/devices")


def parse_cpulist(text: str) -> list[int]:
    """Linux's cpulist format, ``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"not a cpulist: {text!r} (expected e.g. 0-3,8)") from None
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpulist(cpus: Iterable[int]) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``"0-3,8"``."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(set(cpus)):
        if run and c != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(c)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def node_cpus(root: Path = NODE_ROOT) -> dict[int, list[int]]:
    """NUMA node -> its CPUs; empty where sysfs has no node folders."""
    out = {}
    for d in sorted(root.glob("node[0-9]*")):
        f = d / "cpulist"
        if f.is_file():
            out[int(d.name[4:])] = parse_cpulist(f.read_text())
    return out


def nodes_of(cpus: Iterable[int], nodes: Mapping[int, Iterable[int]]) -> list[int]:
    """The NUMA nodes that hold any of ``cpus``."""
    mine = set(cpus)
    return sorted(n for n, cs in nodes.items() if mine & set(cs))


def pci_sysfs_name(bus_id: str) -> str:
    """NVML's ``"00000000:19:00.0"`` -> sysfs's ``"0000:19:00.0"``."""
    domain, _, rest = bus_id.partition(":")
    return f"{int(domain, 16):04x}:{rest.lower()}"


def gpu_numa_node(bus_id: str | None, root: Path = PCI_ROOT) -> int | None:
    if not bus_id:
        return None
    f = root / pci_sysfs_name(bus_id) / "numa_node"
    try:
        node = int(f.read_text().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def rank_host(
    pci_bus_id: str | None,
    *,
    affinity: Iterable[int] | None = None,
    node_root: Path = NODE_ROOT,
    pci_root: Path = PCI_ROOT,
) -> dict:
    """This rank's host facts (see the module docstring)."""
    cpus = sorted(os.sched_getaffinity(0) if affinity is None else affinity)
    nodes = node_cpus(node_root)
    cpu_nodes = nodes_of(cpus, nodes)
    gpu_node = gpu_numa_node(pci_bus_id, pci_root)
    return {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "cpus_allowed": format_cpulist(cpus),
        "cpu_count": len(cpus),
        "cpu_numa_nodes": cpu_nodes,
        "gpu_pci_bus_id": pci_bus_id,
        "gpu_numa_node": gpu_node,
        "cpus_on_gpu_numa_node": None if gpu_node is None or not nodes else gpu_node in cpu_nodes,
    }
