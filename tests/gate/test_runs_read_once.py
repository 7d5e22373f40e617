"""A document's runs are read once (issue 66, items 2 and 3): ``aorta.record.run_set.read_runs`` reads them into a
``RunSet``, and every question of a compare (run ids, samples, machines, blocks, evidence) takes the set.

Before, ``compare_runs`` on a baseline of 4 runs and a candidate with one moved benchmark read the candidate's
stored runs 6 times (``stored_runs`` 5 times: ids twice, machines, blocks, evidence once per moved benchmark; the
samples once more) and the baseline's 4; ``aorta compare`` with a baseline and two candidate files read its 4
documents 19 times. A read is a call of ``aorta.record.run_samples.all_stored``, which every reader goes through:
it is counted, per document, wherever a module of aorta holds it."""

import collections
import sys
from pathlib import Path

import pytest
from cli_in_process import run_aorta
from golden_verdicts import save, stage

import aorta.cli  # noqa: F401 - every module of the gate loaded, so each reader's name is counted
import aorta.record.run_samples as run_samples
from aorta.gate.baselines.baseline import load_run
from aorta.gate.comparison.compare import compare_runs
from aorta.gate.session.state import GateState
from aorta.record.run_set import read_runs


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("read_once")
    stage(where)
    save(where, "base_f1.json", tuple(f"f1-{i}.json" for i in (1, 2, 3, 4)))
    return where


@pytest.fixture
def reads(monkeypatch) -> collections.Counter:
    """id(document) -> how many times its stored runs were read."""
    counted: collections.Counter = collections.Counter()
    real = run_samples.all_stored

    def all_stored(doc):
        counted[id(doc)] += 1
        return real(doc)

    for name, module in list(sys.modules.items()):
        if name.startswith("aorta") and getattr(module, "all_stored", None) is real:
            monkeypatch.setattr(module, "all_stored", all_stored)
    return counted


def test_a_compare_reads_each_documents_runs_once(folder, reads):
    ref, cand, confirm = (load_run(folder / n) for n in ("base_f1.json", "fb-1.json", "fb-2.json"))
    comp = compare_runs(ref, cand, extra_runs=[confirm])
    assert comp.why  # a moved benchmark: its evidence was asked of every side
    assert comp.ref_runs == 4
    assert dict(reads) == {id(ref): 1, id(cand): 1, id(confirm): 1}


def test_a_compare_given_the_run_sets_reads_nothing_again(folder, reads):
    ref, cand = (read_runs(load_run(folder / n)) for n in ("base_f1.json", "fb-1.json"))
    reads.clear()
    assert compare_runs(ref, cand).why
    assert not reads


def test_aorta_compare_reads_each_file_and_the_combined_candidate_once(folder, reads):
    done = run_aorta(["compare", "base_f1.json", "fb-1.json", "fb-2.json", "--verdict-json", ""], cwd=folder)
    assert done.returncode == 10, done.stderr
    assert sorted(reads.values()) == [1, 1, 1, 1]  # the baseline, two candidate files, their combination


def test_a_gates_baseline_is_read_once_for_the_session(folder, reads):
    base = load_run(folder / "base_f1.json")
    state = GateState(baseline=base)
    assert state.baseline_runs() is state.baseline_runs()
    assert state.baseline_runs().doc is base and reads[id(base)] == 1
