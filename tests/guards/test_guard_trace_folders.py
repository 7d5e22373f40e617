"""rocprofv3 outputs read by format (aorta/timeline/rocprof_read.py, issue 58), on a host's folder of several
processes: each process read as its own trace in pid order, a single-trace read refused naming the pids, and a
file already opened (a pipe) read from its stream, never opened again. The real rocprofv3 sample is cut in two
processes (``test_rocprof_as_written.two_processes``); skipped where the AMD traces are absent."""

from __future__ import annotations

import pytest
import trace_cases as cases
from test_rocprof_as_written import two_processes

from aorta.timeline import rocprof_read
from aorta.timeline.rocprof import CSV, ROCPD, RocprofFileError
from aorta.timeline.trace_source import open_source


@pytest.fixture(scope="module")
def kernel_csv() -> bytes:
    return cases.kernel_csv()  # the real sample; skips where absent


def test_a_hosts_folder_is_one_trace_per_process_in_pid_order(kernel_csv, tmp_path):
    two_processes(tmp_path, kernel_csv)
    traces = rocprof_read.read_processes(tmp_path, CSV)
    assert [(t.process, len(t.ops)) for t in traces] == [(100, 5), (200, 4)]


def test_reading_a_folder_of_two_processes_as_one_trace_is_refused_naming_them(kernel_csv, tmp_path):
    two_processes(tmp_path, kernel_csv)
    with pytest.raises(RocprofFileError) as exc:
        rocprof_read.read(tmp_path, CSV)
    assert str(exc.value) == f"{tmp_path}: holds 2 processes (pids 100, 200): read each as a rank"
    (one,) = [p for p in tmp_path.iterdir() if p.name.startswith("100_")]
    assert rocprof_read.read(one, CSV).process == 100


def test_a_file_already_opened_is_read_from_its_stream(kernel_csv, tmp_path):
    path = tmp_path / "from_a_pipe.csv"
    path.write_bytes(kernel_csv)
    with open_source(path) as source:
        path.unlink()  # as a pipe: its bytes can be read once, from the stream already open
        (trace,) = rocprof_read.read_processes(path, CSV, source)
    assert len(trace.ops) == len(cases.rows(kernel_csv))


def test_a_rocpd_database_is_read_as_one(tmp_path):
    if not cases.ROCPD_SAMPLES.is_file():
        pytest.skip(f"{cases.ROCPD_SAMPLES} is absent")
    trace = rocprof_read.read(cases.ROCPD_SAMPLES, ROCPD)
    assert trace.source == ROCPD and trace.ops
