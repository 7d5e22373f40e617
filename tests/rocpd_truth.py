"""A rocpd SQLite database written from a known truth as rocprofv3 writes one (issue 64, item 5).

The layout is rocprofiler-sdk's (schema version 3, as in ``../shared/amd_traces/rocprofv3/rocpd_from_samples.db``
and the real MI300X ``*_results.db``): every table of a session is named with its uuid suffix
(``rocpd_kernel_dispatch_<uuid>``) and read through the unsuffixed view over it; every row carries the session's
``guid``; a record's ``pid`` is ``rocpd_info_process.id`` (whose ``pid`` is the process's), its ``agent_id``,
``queue_id`` and ``stream_id`` are row ids of ``rocpd_info_agent`` / ``_queue`` / ``_stream``; an API call is a
``rocpd_region`` whose ``rocpd_event.stack_id`` is the internal correlation id its kernel's event carries too,
``rocpd_event.correlation_id`` (the external id) is 0. Written here only what a reader could need; the column
names and order of every table written are the sample's (checked against it in tests/report/test_trace_truth.py).

The truth: processes, each with GPU agents (the device a figure is keyed by is the ``agent_id``), kernels on
streams (each stream on its own hardware queue), copies, launch calls no kernel answers and rows written twice.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

UUID = "_0198c0de_5a5a_7abc_8def_00000000c0de"  # the session's uuid, as a table-name suffix
GUID = UUID[1:].replace("_", "-")
SCHEMA: dict[str, str] = {  # table -> its columns, in rocprofiler-sdk's order (rocpd_tables.sql)
    "rocpd_metadata": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "tag" TEXT NOT NULL, "value" TEXT NOT NULL',
    "rocpd_string": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"string" TEXT NOT NULL UNIQUE',
    "rocpd_info_node": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "hash" BIGINT NOT NULL, '
    '"machine_id" TEXT NOT NULL, "system_name" TEXT, "hostname" TEXT, "release" TEXT, "version" TEXT, '
    '"hardware_name" TEXT, "domain_name" TEXT',
    "rocpd_info_process": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL, "init" BIGINT, "fini" BIGINT, "start" BIGINT, '
    '"end" BIGINT, "command" TEXT, "environment" JSONB DEFAULT "{}" NOT NULL, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_thread": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "ppid" INTEGER, "pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL, "name" TEXT, '
    '"start" BIGINT, "end" BIGINT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_agent": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "type" TEXT, "absolute_index" INTEGER, '
    '"logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT, "model_name" TEXT, '
    '"vendor_name" TEXT, "product_name" TEXT, "user_name" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_queue": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "name" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_stream": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "name" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_code_object": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "agent_id" INTEGER, "uri" TEXT, "load_base" BIGINT, '
    '"load_size" BIGINT, "load_delta" BIGINT, "storage_type" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_kernel_symbol": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "code_object_id" INTEGER NOT NULL, "kernel_name" TEXT, '
    '"display_name" TEXT, "kernel_object" INTEGER, "kernarg_segment_size" INTEGER, '
    '"kernarg_segment_alignment" INTEGER, "group_segment_size" INTEGER, "private_segment_size" INTEGER, '
    '"sgpr_count" INTEGER, "arch_vgpr_count" INTEGER, "accum_vgpr_count" INTEGER, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_event": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "category_id" INTEGER, '
    '"stack_id" INTEGER, "parent_stack_id" INTEGER, "correlation_id" INTEGER, '
    '"call_stack" JSONB DEFAULT "{}" NOT NULL, "line_info" JSONB DEFAULT "{}" NOT NULL, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_region": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, '
    '"pid" INTEGER NOT NULL, "tid" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, '
    '"name_id" INTEGER NOT NULL, "event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_kernel_dispatch": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER, "agent_id" INTEGER NOT NULL, '
    '"kernel_id" INTEGER NOT NULL, "dispatch_id" INTEGER NOT NULL, "queue_id" INTEGER NOT NULL, '
    '"stream_id" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, "private_segment_size" INTEGER, '
    '"group_segment_size" INTEGER, "workgroup_size_x" INTEGER NOT NULL, "workgroup_size_y" INTEGER NOT NULL, '
    '"workgroup_size_z" INTEGER NOT NULL, "grid_size_x" INTEGER NOT NULL, "grid_size_y" INTEGER NOT NULL, '
    '"grid_size_z" INTEGER NOT NULL, "region_name_id" INTEGER, "event_id" INTEGER, '
    '"extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_memory_copy": '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, '
    '"nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, '
    '"name_id" INTEGER NOT NULL, "dst_agent_id" INTEGER, "dst_address" INTEGER, "src_agent_id" INTEGER, '
    '"src_address" INTEGER, "size" INTEGER NOT NULL, "queue_id" INTEGER, "stream_id" INTEGER, '
    '"region_name_id" INTEGER, "event_id" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
}
TO_DEVICE, TO_HOST = "MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST"


@dataclass(frozen=True)
class Kernel:
    agent: int  # the GPU's rocpd_info_agent.id
    start_ns: int
    end_ns: int
    name: str
    stream: int  # its stream's index in the process (and its queue's: one queue per stream)


@dataclass(frozen=True)
class Copy:
    agent: int | None  # the GPU end; None: the copy names no agent (either end NULL)
    start_ns: int
    end_ns: int
    direction: str  # TO_DEVICE or TO_HOST


@dataclass
class Process:
    pid: int
    kernels: list[Kernel]
    copies: list[Copy] = field(default_factory=list)
    lost_launches: int = 0  # hipLaunchKernel calls whose kernel the profiler did not record
    twice: set[int] = field(default_factory=set)  # indices of kernels whose rows are written twice


class _Writer:
    def __init__(self, con: sqlite3.Connection, rnd: random.Random) -> None:
        self.con, self.rnd = con, rnd
        self.strings: dict[str, int] = {}
        self.next_id: dict[str, int] = {}

    def row(self, table: str, **values: object) -> int:
        """A row of ``table`` with a fresh id (ids grow by a random stride: no id is another's by accident)."""
        rid = self.next_id.get(table, self.rnd.randint(1, 50)) + self.rnd.randint(1, 7)
        self.next_id[table] = rid
        cols = ", ".join(f'"{c}"' for c in ("id", "guid", *values))
        self.con.execute(
            f"INSERT INTO `{table}{UUID}` ({cols}) VALUES ({', '.join('?' * (len(values) + 2))})",
            (rid, GUID, *values.values()),
        )
        return rid

    def string(self, text: str) -> int:
        if text not in self.strings:
            self.strings[text] = self.row("rocpd_string", string=text)
        return self.strings[text]


def write(path: Path, processes: list[Process], rnd: random.Random) -> Path:
    """The truth's ``processes`` as one rocpd database: each process with its GPU agents (the ids its kernels
    and copies name: unique in the database) and a CPU agent (id 1000 + its place). Every kernel has its
    hipLaunchKernel call 2 µs before it (the same internal correlation id); rows go in in a shuffled order."""
    con = sqlite3.connect(path)
    for table, cols in SCHEMA.items():
        con.execute(f"CREATE TABLE `{table}{UUID}` ({cols})")
        con.execute(f"CREATE VIEW `{table}` AS SELECT * FROM `{table}{UUID}`")
    for tag, value in (("schema_version", "3"), ("uuid", UUID), ("guid", GUID)):
        con.execute(f"INSERT INTO `rocpd_metadata{UUID}` (tag, value) VALUES (?, ?)", (tag, value))
    w = _Writer(con, rnd)
    node = w.row("rocpd_info_node", hash=1, machine_id="truth", hostname="truth")
    dispatch, hip, launch = (
        w.string("KERNEL_DISPATCH"),
        w.string("HIP_RUNTIME_API"),
        w.string("hipLaunchKernel"),
    )
    corr = rnd.randint(1, 1000)  # internal correlation ids: unique in a process, here in the database
    for place, p in enumerate(processes):
        proc = w.row("rocpd_info_process", nid=node, ppid=1, pid=p.pid, command="python train.py")
        thread = w.row("rocpd_info_thread", nid=node, ppid=1, pid=proc, tid=p.pid)
        cpu = 1000 + place
        gpus = sorted({k.agent for k in p.kernels} | {c.agent for c in p.copies if c.agent is not None})
        for i, agent in enumerate([cpu, *gpus]):
            con.execute(
                f"INSERT INTO `rocpd_info_agent{UUID}` (id, guid, nid, pid, type, absolute_index, type_index) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (agent, GUID, node, proc, "GPU" if i else "CPU", i, i - 1 if i else 0),
            )
        code = w.row("rocpd_info_code_object", nid=node, pid=proc, agent_id=cpu, uri="file://truth.hsaco")
        queues = {s: w.row("rocpd_info_queue", nid=node, pid=proc, name=f"Queue {s}") for s in range(4)}
        streams = {s: w.row("rocpd_info_stream", nid=node, pid=proc, name=f"Stream {s}") for s in range(4)}
        symbols: dict[str, int] = {}
        rows: list[tuple] = []
        for i, k in enumerate(p.kernels):
            corr += 1
            rows += [("kernel", k, corr)] * (2 if i in p.twice else 1) + [("launch", k.start_ns - 2000, corr)]
        for _ in range(p.lost_launches):
            corr += 1
            rows.append(("launch", (p.kernels or [Kernel(0, 10**6, 0, "", 0)])[0].start_ns + 500, corr))
        rows += [("copy", c, 0) for c in p.copies]
        rnd.shuffle(rows)
        for what, item, cid in rows:
            if what == "launch":
                event = w.row(
                    "rocpd_event", category_id=hip, stack_id=cid, parent_stack_id=0, correlation_id=0
                )
                w.row("rocpd_region", nid=node, pid=proc, tid=thread, start=item, end=item + 1500,
                      name_id=launch, event_id=event)  # fmt: skip
            elif what == "kernel":
                if item.name not in symbols:
                    symbols[item.name] = w.row("rocpd_info_kernel_symbol", nid=node, pid=proc,
                                               code_object_id=code, kernel_name=f"{item.name}.kd",
                                               display_name=item.name)  # fmt: skip
                event = w.row("rocpd_event", category_id=dispatch, stack_id=cid, parent_stack_id=0,
                              correlation_id=0)  # fmt: skip
                w.row("rocpd_kernel_dispatch", nid=node, pid=proc, tid=thread, agent_id=item.agent,
                      kernel_id=symbols[item.name], dispatch_id=cid, queue_id=queues[item.stream],
                      stream_id=streams[item.stream], start=item.start_ns, end=item.end_ns,
                      workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=1024,
                      grid_size_y=1, grid_size_z=1, region_name_id=w.string(item.name), event_id=event)  # fmt: skip
            else:
                gpu = item.agent
                dst, src = (gpu, cpu) if item.direction == TO_DEVICE else (cpu, gpu)
                if gpu is None:
                    dst = src = None
                w.row("rocpd_memory_copy", nid=node, pid=proc, tid=thread, start=item.start_ns, end=item.end_ns,
                      name_id=w.string(item.direction), dst_agent_id=dst, src_agent_id=src, size=4096,
                      queue_id=None, stream_id=streams[0])  # fmt: skip
    con.commit()
    con.close()
    return path
