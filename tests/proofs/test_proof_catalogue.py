"""The proofs of docs/measurements.md, on CPU: each one's dry run names commands that exist here, every
table of the page names a proof that still runs, every proof names the table it fills, and scripts/gpu
stays a tool rather than a pile (issue 41)."""

import re
import shlex
from pathlib import Path

import pytest

from scripts.gpu import prove
from scripts.gpu.proofs import PROOFS

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PROOF_COMMAND = re.compile(r"python3 -m scripts\.gpu\.prove ([a-z_0-9]+)")


def dry_run(capsys, name: str, *args: str) -> list[list[str]]:
    """The commands of a proof's dry run, as argument lists (after its ``[name, limit]`` prefix)."""
    assert prove.main([name, "--dry-run", *args]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{name}: ")
    return [shlex.split(line.split("] ", 1)[1]) for line in out[1:]]


def sections(page: Path) -> dict[str, str]:
    """Heading -> the text under it, up to the next heading of any level."""
    parts = re.split(r"^(#+ .*)$", page.read_text(encoding="utf-8"), flags=re.M)
    return {parts[i].lstrip("#").strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_scripts_gpu_holds_at_most_eight_files():
    files = [p for p in (REPO / "scripts" / "gpu").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) <= 8, sorted(p.name for p in files)


AORTA_OPTIONS = set(
    re.findall(r"--aorta-[a-z-]+", "".join(p.read_text() for p in (REPO / "aorta").rglob("*.py")))
)


@pytest.mark.parametrize("name", PROOFS)
def test_dry_run_names_files_options_and_programs_that_exist(name, capsys):
    commands = dry_run(capsys, name)
    assert commands or PROOFS[name].gpus == 0, f"{name} runs nothing"
    for argv in commands:
        words = [w for a in argv for w in (shlex.split(a) if " " in a and argv[0] == "bash" else [a])]
        for word in words:
            path = word.split("=", 1)[-1]
            if path.startswith(("benchmarks/", "config/", "scripts/")):
                assert (REPO / path).exists(), f"{name}: {path} is not in the repository"
            for option in re.findall(r"--aorta-[a-z-]+", word):
                assert option in AORTA_OPTIONS, f"{name}: {option} is no option of aorta's"
            if word.startswith("scripts.gpu."):
                assert (REPO / (word.replace(".", "/") + ".py")).is_file(), f"{name}: no module {word}"


def test_every_table_of_measurements_names_a_proof_that_exists():
    unnamed, unknown = [], []
    for heading, text in sections(DOCS / "measurements.md").items():
        if "\n| --- " not in text and "\n```\n" not in text:
            continue
        named = PROOF_COMMAND.findall(text)
        if not named:
            unnamed.append(heading)
        unknown += [n for n in named if n not in PROOFS]
    assert unnamed == [], f"sections with a table and no 'python3 -m scripts.gpu.prove NAME': {unnamed}"
    assert unknown == [], f"proofs named in measurements.md that do not exist: {unknown}"


@pytest.mark.parametrize("name", PROOFS)
def test_each_proof_fills_a_section_that_exists_and_names_it(name):
    page, _, heading = PROOFS[name].fills.rpartition("#")
    found = [h for h in sections(DOCS / (page or "measurements.md")) if h.startswith(heading)]
    assert found, f"{name} fills '{PROOFS[name].fills}': no such heading"
    if not page:  # measurements.md: the section says which proof regenerates it
        assert any(name in PROOF_COMMAND.findall(sections(DOCS / "measurements.md")[h]) for h in found)


def test_scripts_md_lists_every_proof_apart_from_the_users_scripts():
    text = (DOCS / "scripts.md").read_text(encoding="utf-8")
    users, _, proofs = text.partition("## Proofs")
    assert proofs, "docs/scripts.md has no '## Proofs' section"
    missing = [n for n in PROOFS if f"`{n}`" not in proofs]
    assert missing == [], f"proofs missing from docs/scripts.md: {missing}"
    assert "scripts/launch_cuda.sh" in users and "scripts/gpu" not in users


def test_a_knob_the_proof_lacks_is_refused_with_the_ones_it_has(capsys):
    assert prove.main(["gate", "--dry-run", "--set", "slowdown=0.05"]) == 2
    assert "no such knob (its knobs: aa, base_runs, select, slowdowns, streams)" in capsys.readouterr().err


def test_an_unknown_proof_is_refused_with_the_list(capsys):
    assert prove.main(["gate_proof", "--dry-run"]) == 2
    assert "no proof 'gate_proof'; the proofs: hw_queue_suite, " in capsys.readouterr().err


def test_gate_dry_run_saves_once_then_compares_expecting_a_slowdown_to_fail(capsys):
    commands = dry_run(capsys, "gate", "--set", "aa=2", "--set", "slowdowns=0.02,0.05")
    assert [c[-1].split("/")[-1] for c in commands] == [
        "--aorta-runs=5",
        "aa1.verdict.json",
        "aa2.verdict.json",
        "slow_0.02.verdict.json",
        "slow_0.05.verdict.json",
    ]
    assert "--aorta-save-baseline=proof" in commands[0] and "--aorta-compare=proof" in commands[1]
    runs = list(PROOFS["gate"].runs(prove.Knobs(PROOFS["gate"].knobs, {}), Path("w")))
    assert [r.expect for r in runs] == [(0,), (0,), (10,)]  # a calibrated slowdown must exit 10


def test_scale_dry_run_lists_every_step_and_leaves_the_skipped_out(capsys):
    names = [c for c in dry_run(capsys, "scale")]
    assert len(names) == 8
    text = "\n".join(shlex.join(c) for c in names)
    assert "-k 'scenario and baseline' --aorta-config config/large.yaml" in text
    assert "--nproc_per_node 4 --numa-binding node -m pytest" in text
    assert "test_fsdp_tp.py --aorta-device auto -k bf16" in text and "--rdzv-backend c10d" in text
    assert len(dry_run(capsys, "scale", "--set", "skip=fsdp4 large fsdp2 report")) == 4


def test_pool_runs_are_numbered_from_their_seed_and_named_by_tag(capsys):
    commands = dry_run(capsys, "pool", "--set", "tag=e", "--set", "seed0=41", "--set", "max=2")
    assert [c[-1] for c in commands] == ["--aorta-order-seed=41", "--aorta-order-seed=42"]
    assert commands[0][-2].endswith("/pool_e/e-41.json")
    files = PROOFS["pool"].files(prove.Knobs(PROOFS["pool"].knobs, {"env": "CUDA_DEVICE_MAX_CONNECTIONS=1"}))
    assert files == {"pool_a/kind.txt": "change CUDA_DEVICE_MAX_CONNECTIONS=1\n"}
