"""A document's runs as one value (aorta.record.run_set): each run once, with its id, machine, block (kind,
selection) and samples; the raw document rides along."""

from aorta.record.run_samples import stored_runs
from aorta.record.run_set import BASELINE_RUNS_AT, RunSet, StoredRun, read_runs


def entry(rid, value, **kw):
    return {"id": rid, "benchmarks": {"b": {"device_ms": [value]}}, **kw}


def test_a_plain_run_file_is_one_run_the_document_itself():
    doc = {
        "benchmarks": [],
        "datetime": "2026-01-01",
        "machine_info": {"node": "host-a"},
        "aorta_run": {"seed": 3, "kind": "lean", "selection": "all"},
    }
    rs = read_runs(doc)
    assert rs.doc is doc and rs.stored == () and rs.entries == ()
    assert rs.runs == (StoredRun("run1", "host-a", doc["aorta_run"], "2026-01-01"),)
    assert (rs.runs[0].kind, rs.runs[0].selection, rs.runs[0].samples) == ("lean", "all", {})


def test_a_baselines_runs_each_once_with_ids_machines_blocks_in_order():
    block = {"seed": 1, "kind": "lean", "selection": "abc"}
    first = entry("r1", 1.0, machine={"id": "GPU-1"}, block=block)
    doc = {
        "aorta_baseline": {
            "runs": [first, entry("", 2.0), dict(first), "not a run", entry("r4", 4.0, machine="oops")]
        }
    }
    rs = read_runs(doc)
    assert rs.stored_at == BASELINE_RUNS_AT and len(rs.stored) == 5 and rs.repeats == {2: 0}
    assert rs.ids == ("r1", "run2", "run3", "r4")  # places counted over the runs, each once
    assert rs.machines == ("GPU-1", "", "", "")
    assert rs.blocks == (block, None, None, None)
    assert (rs.runs[0].kind, rs.runs[1].kind) == ("lean", None)
    assert rs.runs[0].samples == {"b": {"device_ms": [1.0]}} and rs.runs[2].samples == {}
    assert list(rs.entries) == stored_runs(doc)


def test_a_candidates_runs_and_a_run_set_read_again_is_the_same():
    doc = {"aorta_runs": [entry("a", 1.0), entry("b", 2.0)]}
    rs = read_runs(doc)
    assert rs.stored_at == "aorta_runs" and rs.ids == ("a", "b")
    assert read_runs(rs) is rs and isinstance(rs, RunSet)
