"""Every proof of docs/measurements.md, declared: what it runs, on how many GPUs, which table it fills.

Run one with ``python3 -m scripts.gpu.prove NAME``; ``--list`` prints these; ``--dry-run`` the commands.
Adding one: a ``Proof`` in ``PROOFS`` below (``scripts/gpu/proof.py`` says what each field means), a table
printer in ``tables.py``, ``gate_tables.py`` or ``fsdp_tables.py`` if none fits, and a "Proof:" line under the
section of docs/measurements.md that it fills (tests/proofs/test_proof_catalogue.py checks both ways).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from scripts.gpu import fsdp_tables, gate_tables, tables
from scripts.gpu.proof import PYTEST, TORCHRUN, Knobs, Proof, Run

HW_QUEUE = (*PYTEST, "benchmarks/hw_queue")
KNOWN_ANSWERS = "benchmarks/hw_queue/test_kernel_timeline_known_answer.py"
NO_KNOWN_ANSWERS = f"--ignore={KNOWN_ANSWERS}"
#: the lent machines: NVLink SHARP (multicast) off; few OpenMP threads per rank
TWO_GPU_ENV = {"NCCL_NVLS_ENABLE": "0", "OMP_NUM_THREADS": "4"}
#: FSDP baseline scenario shortened to fit many launches: 6 timed and 6 profiled steps, no reference replica
SHORT_FSDP = ("--aorta-override", "training.warmup_steps=2", "--aorta-override", "training.steps=6",
              "--aorta-override", "profiling.active=6", "--aorta-override", "profiling.reference=false")  # fmt: skip


def _pool_phases(work: Path, knobs: Knobs) -> list[str]:
    """The ``pool`` proof's table (scripts/gpu/pools.py), imported when it is printed: the offline judge
    imports aorta.gate and scipy, which listing the proofs never needs."""
    from scripts.gpu import pools

    return pools.pool_phases(work, knobs)


def torchrun(nproc: int | str, *args: str) -> tuple[str, ...]:
    """``aorta torchrun`` (rank 0's pytest exit code comes through) of pytest with ``args``."""
    return (*TORCHRUN, str(nproc), "-m", "pytest", "-p", "no:cacheprovider", "-q", "--aorta-dist-timeout=120",
            *args)  # fmt: skip


def fsdp(work: Path, nproc: int | str, *args: str) -> tuple[str, ...]:
    """The FSDP suite under ``aorta torchrun``, its per-rank files in the work folder (not ./artifacts; the
    archive leaves the profiler traces out)."""
    return torchrun(nproc, "benchmarks/fsdp", f"--aorta-artifacts={work}/artifacts", *args)


def plain_torchrun(nproc: int | str, *args: str) -> tuple[str, ...]:
    """torchrun itself, for launcher options aorta's wrapper leaves alone (``--numa-binding``, two launchers)."""
    return ("python3", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc), *args)


def _gate(
    k: Knobs, work: Path, base: tuple[str, ...], name: str, baselines: Path | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(save, compare) commands of one gate over ``base``, its baselines under ``<work>/baselines`` (or in
    ``baselines``: an earlier call's, carried in as input)."""
    cmd = (*base, f"--aorta-baseline-dir={baselines or work / 'baselines'}")
    save = (*cmd, f"--aorta-save-baseline={name}", "--aorta-replace-baseline")
    return save, (*cmd, f"--aorta-compare={name}")


# -- the hardware-queue suite and its probes ---------------------------------------------------------------


def _hw_queue_suite(k: Knobs, work: Path):
    mode = (f"--aorta-mode={k['mode']}",) if k["mode"] else ()
    select = f"({k['keywords']}) and not known_answer" if k["keywords"] else "not known_answer"
    steps = k.list("steps")
    if "suite" in steps:
        yield Run("suite", (*HW_QUEUE, "-k", select, *mode, f"--aorta-streams={k['streams']}",
                            f"--benchmark-json={work}/suite.json"))  # fmt: skip
    if "p0_wide" in steps:
        yield Run("p0_wide", (*HW_QUEUE, "-m", "p0", "-k", select, *mode, "--aorta-streams=64,128",
                              "--aorta-issue-order=breadth,depth", f"--benchmark-json={work}/p0_wide.json"))  # fmt: skip
    if "known" in steps:
        yield Run("known", (*PYTEST, KNOWN_ANSWERS, "-rA", "--benchmark-disable", "-s"))
    if "bare_matmul" in steps:
        yield Run("bare_matmul", ("python3", "-m", "scripts.gpu.probes", "bare_matmul"))
    if "multistep" in steps:
        yield Run("multistep", ("python3", "-m", "scripts.gpu.probes", "multistep", "--streams", "4,16"))


def _suite_table(work: Path, k: Knobs) -> list[str]:
    lines = tables.benchmarks_of("suite", "p0_wide")(work, k)
    for name in ("known", "bare_matmul", "multistep"):
        log = work / f"{name}.log"
        if log.is_file():
            keep = ("concurrency", "PASSED", "FAILED", "bare_matmul", "streams=")
            lines += [f"== {name}", *(x for x in log.read_text().splitlines() if any(w in x for w in keep))][
                :20
            ]
    return lines


def _probe(name: str, *args: str):
    return lambda k, work: [Run(name, ("python3", "-m", "scripts.gpu.probes", name, *args))]


#: the CPUs local to GPU 0 (sysfs, by the PCI bus id nvidia-smi reports), for taskset
LOCAL_CPUS = (
    "cat /sys/bus/pci/devices/$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0"
    " | tr A-Z a-z | sed 's/^0000//')/local_cpulist"
)


def _affinity(k: Knobs, work: Path):
    """Eager tiny kernels in fresh processes, interleaving CPU placements: free, the GPU's local CPUs, one
    core of them (the third: ``auto``), or the lists the knobs name."""
    local = f"$({LOCAL_CPUS})" if k["local_cpus"] == "auto" else k["local_cpus"]
    core = f"$(( $({LOCAL_CPUS} | cut -d, -f1 | cut -d- -f1) + 2 ))" if k["core"] == "auto" else k["core"]
    tiny = (*HW_QUEUE, "-k", "tiny_kernel_stress and eager", "--aorta-streams=1,16", "--aorta-rounds=10")
    for i in range(1, k.int("reps") + 1):
        for kind, pin in (
            ("free", ""),
            ("local", f'taskset -c "{local}" '),
            ("core", f'taskset -c "{core}" '),
        ):
            cmd = shlex.join((*tiny, f"--benchmark-json={work}/{kind}-{i}.json"))
            yield Run(f"{kind}-{i}", ("bash", "-c", pin + cmd))


def _telemetry(k: Knobs, work: Path):
    yield Run("telemetry", (*HW_QUEUE, "-k", "large_gemm", "--aorta-streams=1,4",
              f"--benchmark-json={work}/telemetry.json"))  # fmt: skip
    # the command-line fallback on the same GPU: nvidia-smi instead of NVML (its parsers on live output)
    yield Run("telemetry_nvidia_smi", (*HW_QUEUE, "-k", "large_gemm and bf16", "--aorta-streams=4",
              "--aorta-telemetry-source=nvidia-smi", f"--benchmark-json={work}/telemetry_nvidia_smi.json"))  # fmt: skip
    for i in (1, 2):
        for interval in (0, 100):
            yield Run(f"tiny_{interval}_{i}", (*HW_QUEUE, "-k", "tiny_kernel and eager", "--aorta-streams=1",
                      f"--aorta-telemetry-interval-ms={interval}", f"--benchmark-json={work}/tiny_{interval}_{i}.json"))  # fmt: skip
    yield Run("launch_dry_run", ("scripts/launch_cuda.sh", "--dry-run"))


def _queue_connections(k: Knobs, work: Path):
    p0 = (*HW_QUEUE, "-m", "p0", f"--aorta-streams={k['streams']}", "--aorta-issue-order=breadth,depth")
    conn = f"conn{k['connections']}"
    yield Run(
        "default", (*p0, f"--benchmark-json={work}/default.json"), env={"CUDA_DEVICE_MAX_CONNECTIONS": None}
    )
    yield Run(
        conn,
        (*p0, f"--benchmark-json={work}/{conn}.json"),
        env={"CUDA_DEVICE_MAX_CONNECTIONS": k["connections"]},
    )
    yield Run("report", ("python3", "-m", "aorta", "report", "--run", f"{work}/default.json", "--label", "default",
              "--run", f"{work}/{conn}.json", "--label", conn, "--reference", "default", "--candidate", conn,
              "--output", f"{work}/report"))  # fmt: skip
    yield Run("compare", ("python3", "-m", "aorta", "compare", "--allow-env-diff", "CUDA_DEVICE_MAX_CONNECTIONS",
              f"{work}/default.json", f"{work}/{conn}.json"), expect=(0, 10))  # fmt: skip


# -- the gate ----------------------------------------------------------------------------------------------


def _gate_proof(k: Knobs, work: Path):
    base = (*HW_QUEUE, *k.words("select"), NO_KNOWN_ANSWERS, f"--aorta-streams={k['streams']}")
    carried = None if k.int("base_runs") else _carried_baselines(k)
    save, compare = _gate(k, work, base, "proof", carried)
    if carried is None:
        yield Run("baseline", (*save, f"--aorta-runs={k['base_runs']}"))
    for i in range(1, k.int("aa") + 1):
        yield Run(f"aa{i}", (*compare, f"--aorta-verdict-json={work}/aa{i}.verdict.json"))
    for s in k.list("slowdowns"):
        yield Run(f"slow_{s}", (*compare, f"--aorta-test-slowdown={s}", f"--aorta-verdict-json={work}/slow_{s}.verdict.json"),
                  expect=(10,))  # fmt: skip


P0 = (*HW_QUEUE, "-m", "p0", NO_KNOWN_ANSWERS)


def _repeated_aa(name: str, compare: tuple, k: Knobs, work: Path):
    """``aa`` A/A compares against one baseline, one after another (issue 45: 3 of 3 exit 0 on a machine)."""
    for i in range(1, int(k["aa"]) + 1):
        tag = name if i == 1 else f"{name}{i}"
        yield Run(tag, (*compare, "--aorta-runs=auto", f"--aorta-budget={k['compare']}",
                  f"--aorta-verdict-json={work}/{tag}.verdict.json"), expect=(0, 15))  # fmt: skip


def _gate_power(k: Knobs, work: Path):
    """Issue 36, one part per device call: ``save`` (a p0 baseline with --aorta-runs auto, an A/A compare and a
    2% slowdown), ``other`` (another machine with that baseline carried in: A/A and a 10% slowdown, then aorta ab
    A = B and B with TF32 forced for fp32 GEMMs), ``fsdp`` (aorta ab under torchrun, B with NCCL_MAX_NCHANNELS=4)."""
    part = k["part"]
    auto = ("--aorta-runs=auto",)
    if part in ("save", "other"):
        carried = _carried_baselines(k) if part == "other" else None
        save, compare = _gate(k, work, P0, "p0", carried)
        if part == "save":
            yield Run("save", (*save, *auto, f"--aorta-budget={k['save']}"))
            yield from _repeated_aa("aa_same", compare, k, work)
            if not k["slowdown"]:  # empty: the slowdown in a later call (part=other on the same warm machine)
                return
            yield Run("slow", (*compare, *auto, f"--aorta-budget={k['compare']}", f"--aorta-test-slowdown={k['slowdown']}",
                      f"--aorta-verdict-json={work}/slow.verdict.json"), expect=(10,))  # fmt: skip
            return
        yield from _repeated_aa("aa_other", compare, k, work)
        slow = k["other_slowdown"]
        if slow:  # on another machine a change within the machines' spread is UNSURE (exit 15) by design
            yield Run(
                f"slow{round(float(slow) * 100)}_other",
                (
                    *compare,
                    *auto,
                    f"--aorta-budget={k['compare']}",
                    f"--aorta-test-slowdown={slow}",
                    f"--aorta-verdict-json={work}/slow{round(float(slow) * 100)}_other.verdict.json",
                ),
                expect=(10, 15),
            )
    if part == "ab" or (part == "other" and (k["ab"] or k["ab_same"])):
        ab = ("python3", "-m", "aorta", "ab", "--budget", k["ab"])
        if k["ab"]:
            yield Run("ab_tf32", (*ab, "--a", "", "--b", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1", "--out", f"{work}/ab_tf32",
                  "--verdict-json", f"{work}/ab_tf32.verdict.json", "--", *P0[3:], "-k", "large_gemm"), expect=(0, 15))  # fmt: skip
        if k["ab_same"]:
            yield Run("ab_same", ("python3", "-m", "aorta", "ab", "--budget", k["ab_same"], "--a", "", "--b", "", "--out", f"{work}/ab_same",
                  "--verdict-json", f"{work}/ab_same.verdict.json", "--", *P0[3:]), expect=(0, 15))  # fmt: skip
        if k["ab_slow"]:  # B with a calibrated slowdown: its pytest options through PYTEST_ADDOPTS
            yield Run("ab_slow", ("python3", "-m", "aorta", "ab", "--budget", k["ab_slow"], "--a", "",
                      "--b", f"PYTEST_ADDOPTS=--aorta-test-slowdown={k['ab_slowdown']}", "--out", f"{work}/ab_slow",
                      "--verdict-json", f"{work}/ab_slow.verdict.json", "--", *P0[3:]), expect=(10,))  # fmt: skip
    if part == "fsdp":
        yield Run("ab_fsdp", ("python3", "-m", "aorta", "ab", "--runs", k["pairs"], "--a", "", "--b", "NCCL_MAX_NCHANNELS=4",
                  "--out", f"{work}/ab_fsdp", "--verdict-json", f"{work}/ab_fsdp.verdict.json", "--", "torchrun", "--standalone",
                  "--nproc_per_node", k["nproc"], "-m", "pytest", "benchmarks/fsdp", "-k", k["fsdp_select"], "-p", "no:cacheprovider",
                  "-q", f"--aorta-artifacts={work}/artifacts", *SHORT_FSDP), expect=(10,))  # fmt: skip


P0_AS_GIVEN = (
    *HW_QUEUE,
    "-m",
    "p0",
)  # the README's command as given: the known-answer file runs in check runs


def _gate_budget(k: Knobs, work: Path):
    """Issue 55, one part per device call, the README's gate commands on p0 as given (no --ignore):
    ``probe`` (a full run and three lean runs with their phases), ``save`` (a baseline with --aorta-runs auto),
    ``aa`` and ``slow`` (an A/A compare and a 2% slowdown against a carried baseline: base_runs=0 and the save's
    archive as input), ``ab`` (aorta ab A = B)."""
    part, budget = k["part"], f"--aorta-budget={k['budget']}"
    if part == "probe":
        yield Run("full", (*P0_AS_GIVEN, "--durations=60", f"--benchmark-json={work}/full.json"))
        for i in range(1, 4):
            yield Run(
                f"lean{i}",
                (*P0_AS_GIVEN, "--durations=60", "--aorta-lean-run", f"--benchmark-json={work}/lean{i}.json"),
            )
        return
    if part == "ab":
        yield Run("ab", ("python3", "-m", "aorta", "ab", "--a", "", "--b", "", "--budget", k["ab"], "--out", f"{work}/ab",
                  "--verdict-json", f"{work}/ab.verdict.json", "--", *P0_AS_GIVEN[3:]), expect=(0, 15))  # fmt: skip
        return
    save, compare = _gate(k, work, P0_AS_GIVEN, "p0", None if part == "save" else _carried_baselines(k))
    if part == "save":
        yield Run("save", (*save, "--aorta-runs=auto", budget))
    elif part == "aa":
        yield Run("aa", (*compare, "--aorta-runs=auto", budget, f"--aorta-verdict-json={work}/aa.verdict.json"), expect=(0, 15))  # fmt: skip
    else:
        yield Run("slow", (*compare, "--aorta-runs=auto", budget, f"--aorta-test-slowdown={k['slowdown']}",
                  f"--aorta-verdict-json={work}/slow.verdict.json"), expect=(10,))  # fmt: skip


def _budget_table(work: Path, knobs) -> list[str]:
    """Each gate's last lines: where its wall went, by run kind, its verdict and what it saved."""
    keep = ("where the", "  check runs", "  lean runs", "verdict:", "saved:", "look at", "passed")
    out = []
    for name in ("full", "lean1", "lean2", "lean3", "save", "aa", "slow", "ab"):
        log = work / f"{name}.log"
        if log.is_file():
            out += [
                f"{name}: {line}" for line in log.read_text().splitlines() if any(w in line for w in keep)
            ]
    return out or ["gate_budget: no log"]


def _run_cost(k: Knobs, work: Path):
    """Issue 45, cheap repeats: what a run started from nothing pays before its benchmarks, where a lean p0 run's
    session goes (its main thread sampled), and a gate's lean runs forked from the fork server against runs
    started from nothing (``AORTA_RUN_START``)."""
    yield Run("costs", ("python3", "-m", "scripts.run_cost"))
    for n in range(1, int(k["lean_runs"]) + 1):
        yield Run(f"lean{n}", (*P0[:-1], "-p", "scripts.run_cost", "--aorta-lean-run", "--durations=0",
                  f"--benchmark-json={work}/lean{n}.json"), env={"AORTA_STACKS": f"{work}/stacks{n}.txt"})  # fmt: skip
    for start in ("fork", "exec"):
        save = (*P0[:-1], f"--aorta-baseline-dir={work}/{start}", f"--aorta-save-baseline={start}",
                "--aorta-runs=auto", f"--aorta-budget={k['budget']}")  # fmt: skip
        yield Run(f"gate_{start}", save, env={"AORTA_RUN_START": start})


def _harness_noise(k: Knobs, work: Path):
    """Issue 36 item 6: does the harness add the between-process noise? Pools of fresh processes of the same
    benchmarks: full runs with CUPTI left attached after each kernel pass (``TEARDOWN_CUPTI=0``, as before) and
    detached (aorta's default), lean runs, and the host-bound eager variants with the process on one CPU
    (``taskset``) or wherever the scheduler puts it."""
    sel = (*HW_QUEUE, "-m", "p0", NO_KNOWN_ANSWERS, "-k", k["select"])
    for pool, env, extra in (
        ("attached", {"TEARDOWN_CUPTI": "0"}, ()),
        ("detached", {"TEARDOWN_CUPTI": None}, ()),
        ("lean", {"TEARDOWN_CUPTI": None}, ("--aorta-lean-run",)),
    ):
        yield Run(
            pool, (*sel, *extra, f"--benchmark-json={work}/{pool}-{{k}}.json"), env=env, repeat=k.int("runs")
        )
    eager = (
        *HW_QUEUE,
        "-m",
        "p0",
        NO_KNOWN_ANSWERS,
        "-k",
        "tiny_kernel_stress and eager",
        "--aorta-lean-run",
    )
    yield Run(
        "eager_free", (*eager, f"--benchmark-json={work}/eager_free-{{k}}.json"), repeat=k.int("eager_runs")
    )
    yield Run("eager_pinned", ("taskset", "-c", k["cpu"], *eager, f"--benchmark-json={work}/eager_pinned-{{k}}.json"),
              repeat=k.int("eager_runs"))  # fmt: skip


def _history(k: Knobs, work: Path):
    """Issue 40 on a GPU: runs kept by pytest (--aorta-history), by a gate's fresh runs and by a compare against
    the history's own runs of this stack, then ``aorta history show`` and ``page``."""
    db = f"{work}/history.db"
    p0 = (*P0, f"--aorta-history={db}")
    yield Run(
        "baseline",
        (*p0, "--aorta-save-baseline=h40", "--aorta-runs=2", f"--aorta-baseline-dir={work}/baselines"),
    )
    yield Run("compare", ("bash", "-c", 'exec "$@" "--aorta-compare=history:$(python3 -m aorta stack)"', "compare", *p0,
              "--aorta-runs=2", "--aorta-confirm=0", f"--aorta-verdict-json={work}/history.verdict.json"), expect=(0, 15))  # fmt: skip
    history = ("python3", "-m", "aorta", "history", "--history", db)
    yield Run("show", (*history, "show", "-k", "large_gemm", "--figure", "device_ms"))
    yield Run("page", (*history, "page", f"{work}/history.html", "-k", "large_gemm"))


def _carried_baselines(k: Knobs) -> Path:
    """``base_runs=0``: the baselines folder of an earlier call's archive, given as input (the compares then
    run on another machine than the one that saved it)."""
    if len(k.inputs) != 1:
        raise ValueError(
            "--set base_runs=0: give the earlier call's gate archive (gate.tgz) as the one input"
        )
    found = sorted(k.inputs[0].rglob("baselines")) if k.inputs[0].is_dir() else []
    return found[0] if found else k.inputs[0] / "baselines"


def _pool(k: Knobs, work: Path):
    """Fresh-process runs of one suite, the benchmark order varied by seed, as many as fit the budget."""
    tag, extra = k["tag"], []
    if k["streams"]:
        extra.append(f"--aorta-streams={k['streams']}")
    if k["slowdown"]:
        extra.append(f"--aorta-test-slowdown={k['slowdown']}")
    if k["ballast"]:
        extra.append(f"--aorta-test-comm-ballast={k['ballast']}")
    if k["suite"] == "hw_queue":
        launch: tuple[str, ...] = (*HW_QUEUE, NO_KNOWN_ANSWERS)
    elif k["suite"] == "fsdp":
        launch = fsdp(work, k["nproc"])
    else:
        raise ValueError(f"--set suite={k['suite']}: allowed hw_queue, fsdp")
    env = dict(pair.split("=", 1) for pair in k.words("env"))
    yield Run(tag, (*launch, *k.words("select"), f"--benchmark-json={work}/pool_{tag}/{tag}-{{k}}.json",
                    "--aorta-order-seed={k}", *extra), env={**TWO_GPU_ENV, **env},
              repeat=k.int("max"), first=k.int("seed0"))  # fmt: skip


def _pool_files(k: Knobs) -> dict[str, str]:
    kind = "change" if k["env"] else "slowdown" if k["slowdown"] or k["ballast"] else "aa"
    return {f"pool_{k['tag']}/kind.txt": f"{kind} {k['env']}\n"}


def _judge(k: Knobs, work: Path):
    args = ["--base-runs", k["base_runs"], "--cand-runs", k["cand_runs"], "--pairs", k["pairs"]]
    args += ["--base-pools", k["base_pools"]]
    yield Run(
        "judge", ("python3", "-m", "scripts.gpu.pools", "judge", f"{work}/judged", *map(str, k.inputs), *args)
    )


def _throttle_table(work: Path, k: Knobs) -> list[str]:
    return tables.throttle_rounds(list(k.inputs))


def _same_figures(k: Knobs, work: Path):
    """Runs of the tree before (a ``git archive`` tar) and of this checkout, alternating, each a fresh process."""
    tree = work / "in" / "before"
    yield Run("unpack", ("bash", "-c", f"mkdir -p {tree} && tar xf {k['before_tar']} -C {tree}"))
    sides = ["before", "after"] if k["first"] == "before" else ["after", "before"]
    launch = (*HW_QUEUE, NO_KNOWN_ANSWERS) if k["suite"] == "hw_queue" else fsdp(work, 2)
    for i in range(1, k.int("runs") + 1):
        for side in sides:
            json_out = f"--benchmark-json={work}/{side}/{k['tag']}-{side}-{i}.json"
            cmd = (*launch, json_out, f"--aorta-order-seed={i}")
            if side == "before":  # the old tree's own aorta and benchmarks, from its own root
                cmd = ("bash", "-c", f"cd {tree} && PYTHONPATH={tree} exec {shlex.join(cmd)}")
            yield Run(f"{side}_{i}", cmd, env=TWO_GPU_ENV)


def _same_judge(k: Knobs, work: Path):
    yield Run(
        "same",
        ("python3", "-m", "scripts.gpu.pools", "same", f"{work}/judged", *map(str, k.inputs)),
        expect=(0,),
    )


def _why(k: Knobs, work: Path):
    base = (*HW_QUEUE, *k.words("select"), f"--aorta-streams={k['streams']}")
    save, compare = _gate(k, work, base, "why")
    compare = (*compare, f"--aorta-runs={k['runs']}", "--aorta-confirm=0")
    off = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": None, "TORCH_BLAS_PREFER_CUBLASLT": None}
    yield Run("baseline", (*save, f"--aorta-runs={k['base_runs']}"), env=off)
    yield Run("tf32", (*compare, "--aorta-allow-env-diff=TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
              f"--aorta-verdict-json={work}/tf32.verdict.json"), env={**off, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"},
              expect=(0, 10))  # fmt: skip
    if k["cublaslt"] == "1":
        yield Run("cublaslt", (*compare, "--aorta-allow-env-diff=TORCH_BLAS_PREFER_CUBLASLT",
                  f"--aorta-verdict-json={work}/cublaslt.verdict.json"), env={**off, "TORCH_BLAS_PREFER_CUBLASLT": "1"},
                  expect=(0, 10))  # fmt: skip
    yield Run("slowdown", (*compare, f"--aorta-test-slowdown={k['slowdown']}",
              f"--aorta-verdict-json={work}/slowdown.verdict.json"), env=off, expect=(10,))  # fmt: skip


def _why_comm(k: Knobs, work: Path):
    base = fsdp(work, k["nproc"], "-k", "baseline")
    for tag, runs, env in (("wa", k["base_runs"], {}), ("wn", k["runs"], dict([k["change"].split("=", 1)]))):
        yield Run(tag, (*base, f"--benchmark-json={work}/pool_{tag}/{tag}-{{k}}.json", "--aorta-order-seed={k}"),
                  env=env, repeat=int(runs), limit_s=150)  # fmt: skip
    yield Run("judge", ("python3", "-m", "scripts.gpu.pools", "judge", f"{work}/judged", f"{work}/pool_wa",
              f"{work}/pool_wn", "--base-runs", k["base_runs"], "--cand-runs", k["runs"]))  # fmt: skip
    cmd = plain_torchrun(k["nproc"], "-m", "pytest", "benchmarks/fsdp", "-k", "baseline", "-p", "no:cacheprovider",
                         "-q", "--aorta-dist-timeout", "60", *SHORT_FSDP)  # fmt: skip
    yield Run("sweep", ("python3", "-m", "aorta", "sweep", "--grid", "NCCL_MAX_NCHANNELS=2,8", "--grid",
              "NCCL_PROTOCOL=LL,Simple", "--output", f"{work}/sweep", "--label", "knobs", "--cell-timeout", "70",
              "--", *cmd), env={"NCCL_DEBUG": "INFO"}, limit_s=300)  # fmt: skip


def _why_comm_table(work: Path, k: Knobs) -> list[str]:
    lines = tables.log_tail("judge", 25)(work, k)
    sweep = (work / "sweep.log").read_text().splitlines() if (work / "sweep.log").is_file() else []
    start = next((i for i, x in enumerate(sweep) if "did each setting take effect" in x), len(sweep))
    return [*lines, "== the sweep's knob check", *sweep[start : start + 30]]


def _stream_dependency(k: Knobs, work: Path):
    bench = (*PYTEST, "benchmarks/hw_queue/test_stream_dependency.py")
    yield Run("sweep", (*bench, f"--aorta-streams={k['streams']}", f"--benchmark-json={work}/sweep.json"))
    gate = (*bench, "-k", k["gate_k"], f"--aorta-streams={k['gate_streams']}")
    save, compare = _gate(k, work, gate, "dep")
    yield Run("baseline", (*save, f"--aorta-runs={k['base_runs']}"))
    yield Run("aa", (*compare, f"--aorta-verdict-json={work}/aa.verdict.json"))
    yield Run("extra_dep", (*compare, "--aorta-extra-deps=1", f"--aorta-verdict-json={work}/extra_dep.verdict.json"),
              expect=(10,))  # fmt: skip


def _stream_dependency_table(work: Path, k: Knobs) -> list[str]:
    return [*tables.benchmarks_of("sweep")(work, k), *gate_tables.verdict_lines("aa", "extra_dep")(work, k)]


# -- FSDP on several GPUs ----------------------------------------------------------------------------------


def _fsdp_suite(k: Knobs, work: Path):
    run = torchrun(k["nproc"], "benchmarks/fsdp", "-rA", f"--aorta-artifacts={work}/artifacts_fsdp")
    yield Run("fsdp", (*run, "-k", "not compile", f"--benchmark-json={work}/fsdp.json"), limit_s=230)
    yield Run("fsdp_compile", fsdp(work, k["nproc"], "-k", "compile",
              f"--benchmark-json={work}/fsdp_compile.json"), limit_s=120)  # fmt: skip
    traces = f"{work}/artifacts_fsdp/torch_profiler/rank*/baseline.pt.trace.json"  # off on ROCm and CPU
    yield Run("merge", ("bash", "-c", f"python3 -m aorta trace merge {traces} --output {work}/merged_baseline.json"),
              limit_s=60, expect=(0, 1, 2))  # fmt: skip
    yield Run("report", ("python3", "-m", "aorta", "report", "--run", f"{work}/artifacts_fsdp", "--label", "fsdp",
              "--output", f"{work}/report"), limit_s=60)  # fmt: skip


def _fsdp_idle(k: Knobs, work: Path):
    for batch in ("8", k["big_batch"]):
        yield Run(f"batch{batch}", fsdp(work, k["nproc"], "-k", k["select"], "--aorta-override",
                  f"dataset.batch_size={batch}", f"--benchmark-json={work}/batch{batch}.json"), limit_s=280)  # fmt: skip


def two_launchers(nproc: int, select: str, device: str, json_out: str, port: int = 29517) -> tuple[str, ...]:
    """Two torchrun launchers of ``nproc`` ranks on this host, each its own GPUs, meeting through a c10d
    rendezvous on localhost (the multi-node path); one command, exit 0 only when both launchers exit 0."""
    launches = []
    for node in (0, 1):
        gpus = ",".join(str(node * nproc + i) for i in range(nproc))
        visible = f"CUDA_VISIBLE_DEVICES={gpus} HIP_VISIBLE_DEVICES={gpus} " if device != "cpu" else ""
        launches.append(
            f"{visible}python3 -m torch.distributed.run --nnodes 2 --node_rank {node} --nproc_per_node {nproc} "
            f"--rdzv-backend c10d --rdzv-endpoint localhost:{port} --rdzv-id aorta-{port} -m pytest benchmarks/fsdp "
            f"-k '{select}' -p no:cacheprovider -p no:randomly -rA --aorta-device {device} --aorta-dist-timeout 120 "
            f"--aorta-artifacts={Path(json_out).parent}/artifacts_two --benchmark-json={json_out}"
        )
    return ("bash", "-c", f"{launches[0]} & a=$!; {launches[1]}; b=$?; wait $a; exit $(( $? | b ))")


def _two_launchers(k: Knobs, work: Path):
    net = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"} if k["net"] == "1" else {}  # NCCL's network path
    yield Run("two_launchers", two_launchers(k.int("nproc"), k["select"], k["device"], f"{work}/two_launchers.json",
                                             k.int("port")),
              env={**TWO_GPU_ENV, **net}, limit_s=300)  # fmt: skip


def _scale(k: Knobs, work: Path):
    n, half, dev = k.int("nproc"), k.int("nproc") // 2, ("--aorta-device", k["device"])
    skip = set(k.words("skip"))
    steps = {
        "fsdp4": (fsdp(work, n, *dev, "-k", k["select"], f"--benchmark-json={work}/{n}ranks.json"), 270),
        "large": (fsdp(work, n, *dev, "-k", "scenario and baseline", "--aorta-config", "config/large.yaml",
                           f"--benchmark-json={work}/large.json"), 150),
        "fsdp2": (fsdp(work, half, *dev, "-k", k["select"], f"--benchmark-json={work}/{half}ranks.json"), 240),
        "tp2": (torchrun(half, "benchmarks/hw_queue/test_fsdp_tp.py", *dev, "-k", "bf16", "--aorta-streams=2,4,16",
                         f"--benchmark-json={work}/tp{half}.json"), 60),
        "tp4": (torchrun(n, "benchmarks/hw_queue/test_fsdp_tp.py", *dev, "-k", "bf16", "--aorta-streams=2,4,16",
                         f"--benchmark-json={work}/tp{n}.json"), 60),
        "two": (two_launchers(half, k["two_select"], k["device"], f"{work}/two_launchers.json"), 120),
        "bind4": (plain_torchrun(n, "--numa-binding", "node", "-m", "pytest", "benchmarks/fsdp", "-k", "explicit_prefetch",
                                 "-p", "no:cacheprovider", "-q", f"--aorta-artifacts={work}/artifacts",
                                 f"--benchmark-json={work}/{n}ranks_numa_bound.json"), 90),
        "report": (("python3", "-m", "aorta", "report", "--run", f"{work}/{half}ranks.json", "--label", f"{half}ranks",
                    "--run", f"{work}/{n}ranks.json", "--label", f"{n}ranks", "--output", f"{work}/report"), 40),
    }  # fmt: skip
    for name, (cmd, limit) in steps.items():
        if name not in skip and not (name == "bind4" and k["device"] == "cpu"):
            yield Run(name, cmd, env=TWO_GPU_ENV, limit_s=limit)


def _tp_ranks(k: Knobs, work: Path):
    for i in range(1, k.int("repeat") + 1):
        for n in k.words("sizes"):
            yield Run(f"w{n}_r{i}", torchrun(n, "benchmarks/hw_queue/test_fsdp_tp.py", "-k", "bf16", "-p", "no:randomly",
                      f"--aorta-streams={k['streams']}", f"--benchmark-json={work}/w{n}_r{i}.json"), env=TWO_GPU_ENV,
                      limit_s=120)  # fmt: skip


def _straggler_swap(k: Knobs, work: Path):
    for order in ("forward", "reverse"):
        yield Run(f"swap_{order}", fsdp(work, k.int("nproc"), "-k", k["select"],
                  f"--benchmark-json={work}/swap_{order}.json"), env={**TWO_GPU_ENV, "CUDA_VISIBLE_DEVICES": k[order]})  # fmt: skip


def _sweep(k: Knobs, work: Path):
    cmd = plain_torchrun(k["nproc"], "-m", "pytest", "benchmarks/fsdp", "-k", "baseline", "-p", "no:cacheprovider",
                         "-q", "--aorta-dist-timeout", "60", *SHORT_FSDP)  # fmt: skip
    grid = (
        "--grid",
        "NCCL_NTHREADS=256,512",
        "--grid",
        "NCCL_MAX_NCHANNELS=4,16",
        "--cell-timeout",
        k["cell_s"],
    )
    for label, env in (
        ("default", {"TORCH_NCCL_HIGH_PRIORITY": None}),
        ("high_priority", {"TORCH_NCCL_HIGH_PRIORITY": "1"}),
    ):
        yield Run(label, ("python3", "-m", "aorta", "sweep", *grid, "--output", f"{work}/{label}", "--label", label,
                  "--", *cmd), env={**TWO_GPU_ENV, **env}, limit_s=k.int("stack_s"))  # fmt: skip
    yield Run("report", ("python3", "-m", "aorta", "report", "--sweep", f"{work}/default", "--sweep",
              f"{work}/high_priority", "--output", f"{work}/report"), limit_s=60)  # fmt: skip


_PROOFS = [
    Proof(name="hw_queue_suite", gpus=1, runs=_hw_queue_suite, table=_suite_table,
          what="the default hardware-queue suite as a user runs it, P0 at 64 and 128 streams (both issue orders), "
               "the kernel-timeline known answers; steps bare_matmul and multistep on request",
          fills="Reading the profiler, sizes for a busy GPU, and the suite again",
          knobs={"streams": "1,4,16", "mode": "", "keywords": "", "steps": "suite,p0_wide,known"}),
    Proof(name="sizes", gpus=1, table=tables.log_tail("sizes"), fills="Reading the profiler, sizes for a busy GPU",
          what="device ms, GPU busy, concurrency and CV of workloads at chosen sizes (GPU mode, 20 rounds)",
          runs=lambda k, work: [Run("sizes", ("python3", "-m", "scripts.gpu.probes", "sizes", k["streams"], *k.words("cases")))],
          knobs={"streams": "1", "cases": "graph_subgraphs::mode=graph,B=2048 rag_pipeline::B=32 "
                                          "continuous_batch:bf16:batch=32 speculative_decode:bf16:batch=8"}),
    Proof(name="profiler_scope", gpus=1, runs=_probe("profiler_scope"), table=tables.log_tail("profiler_scope", 12),
          what="the capture with user-scope host ranges against torch.profiler's full recording: cost, same ops",
          fills="Reading the profiler, sizes for a busy GPU"),
    Proof(name="graph_trace", gpus=1, runs=_probe("graph_trace"), table=tables.log_tail("graph_trace"),
          what="what the trace holds for a replayed multi-stream graph; the host cost of a profiled pass",
          fills="GPU mode with graph replay"),
    Proof(name="kernel_traces", gpus=1, table=tables.log_tail("kernel_traces", 10),
          runs=lambda k, work: [Run("kernel_traces", ("python3", "-m", "scripts.gpu.probes", "kernel_traces", f"{work}/traces"))],
          what="record the small kernel traces tests/data keeps (four spins, async_dataload at smoke size)",
          fills="Hardware-queue suite on the GPU's kernel timeline"),
    Proof(name="affinity", gpus=1, runs=_affinity, table=tables.affinity_table,
          what="whether CPU placement (free, the GPU's local CPUs, one core) explains the spread of eager launch cost",
          fills="Gate noise floors", knobs={"reps": "3", "local_cpus": "auto", "core": "auto"}),
    Proof(name="telemetry", gpus=1, runs=_telemetry, table=tables.telemetry_table,
          what="telemetry through NVML and the nvidia-smi fallback, machine_info read back, whether sampling "
               "disturbs eager tiny kernels, the CUDA launcher's dry run", fills="telemetry.md#GPU telemetry"),
    Proof(name="queue_connections", gpus=1, runs=_queue_connections,
          table=tables.stream_concurrency_pair("default", "conn32"),
          what="the P0 suite in both issue orders with CUDA_DEVICE_MAX_CONNECTIONS default and raised, report and compare",
          fills="reference_floors.md#Streams and queues", knobs={"streams": "1,4,16,64", "connections": "32"}),
    Proof(name="gate", gpus=1, runs=_gate_proof, table=gate_tables.gate_compares, collect=(".aorta/runs",),
          what="the run-level gate: a baseline of fresh runs, A/A compares (exit 0) and calibrated slowdowns (exit 10); "
               "base_runs=0 with an earlier call's archive as input judges on another machine",
          fills="The run-level gate on H100",
          knobs={"select": "-m p0", "streams": "1,16", "base_runs": "5", "aa": "1", "slowdowns": "0.05"}),
    Proof(name="pool", gpus=1, runs=_pool, files=_pool_files, table=_pool_phases,
          what="a pool of fresh-process runs (the gate's sample) for the offline judge; slowdown, ballast or env "
               "make it a slowdown or change pool; suite=fsdp on two GPUs",
          fills="The run-level gate on the full default suite",
          knobs={"tag": "a", "max": "8", "seed0": "1", "select": "", "streams": "", "slowdown": "", "ballast": "",
                 "env": "", "suite": "hw_queue", "nproc": "2"}),
    Proof(name="judge", gpus=0, runs=_judge, table=tables.log_tail("judge", 120),
          what="pools of several calls judged offline through aorta compare: A/A pairs, slowdowns, changes, MDE projected",
          fills="Across machines and FSDP",
          knobs={"base_runs": "2", "cand_runs": "2", "pairs": "10", "base_pools": "1"}),
    Proof(name="throttle", gpus=0, runs=lambda k, work: [], table=_throttle_table,
          what="throttled rounds by cause in pools' runs, and whether the sampled clock explains device time",
          fills="Throttled rounds on H100"),
    Proof(name="same_figures", gpus=1, runs=_same_figures, table=tables.last_lines,
          files=lambda k: {"before/.keep": "", "after/.keep": ""},  # an older tree's writer may not make them
          what="runs of a tree from before a refactor (before.tar: git archive) and of this checkout, alternating",
          fills="The code moved, the figures did not",
          knobs={"before_tar": "before.tar", "suite": "hw_queue", "runs": "1", "first": "before", "tag": "m1"}),
    Proof(name="same_figures_judge", gpus=0, runs=_same_judge, table=tables.log_tail("same", 100),
          what="the after runs of same_figures calls judged against the before runs (an A/A: exit 0)",
          fills="The code moved, the figures did not"),
    Proof(name="why", gpus=1, runs=_why, table=gate_tables.why_checks, collect=(".aorta/runs",),
          what="every moved verdict says why: TF32 forced (kernel_selection), cuBLASLt, the calibrated slowdown",
          fills="A change past a figure's own MDE",
          knobs={"select": "-k large_gemm_only", "streams": "1", "base_runs": "3", "runs": "2", "slowdown": "0.05",
                 "cublaslt": "1"}),
    Proof(name="why_comm", gpus=2, runs=_why_comm, table=_why_comm_table, env=TWO_GPU_ENV,
          files=lambda k: {"pool_wa/kind.txt": "aa\n", "pool_wn/kind.txt": f"change {k['change']}\n"},
          what="a communication setting's verdict names collective_config; a sweep flags a knob that did nothing",
          fills="A change past a figure's own MDE",
          knobs={"nproc": "2", "base_runs": "3", "runs": "2", "change": "NCCL_MAX_NCHANNELS=2"}),
    Proof(name="stream_dependency", gpus=1, runs=_stream_dependency, table=_stream_dependency_table,
          collect=(".aorta/runs",), fills="A change past a figure's own MDE",
          what="stream_dependency swept over streams; the gate on its graph variants: A/A, and one extra dependency",
          knobs={"streams": "1,2,4,8,16,32", "gate_k": "graph", "gate_streams": "4,16", "base_runs": "6"}),
    Proof(name="fsdp_suite", gpus=2, runs=_fsdp_suite, table=fsdp_tables.fsdp_suite, env=TWO_GPU_ENV,
          what="every FSDP scenario and the known-answer overlap test at the default config, and a report",
          fills="FSDP on 2x H200", knobs={"nproc": "2"}),
    Proof(name="fsdp_idle", gpus=2, runs=_fsdp_idle, table=fsdp_tables.fsdp_idle, env=TWO_GPU_ENV,
          what="whether the FSDP step is GPU-bound: three scenarios at batch 8 and a larger one",
          fills="FSDP on 2x H200",
          knobs={"nproc": "2", "big_batch": "32", "select": "baseline or explicit_prefetch or no_reshard"}),
    Proof(name="scale", gpus=4, runs=_scale, table=fsdp_tables.scale,
          what="the FSDP suite at 4 and 2 ranks, the large config, fsdp_tp at both, two launchers, NUMA binding, "
               "the scaling report; skip names steps left for a second call",
          fills="Scale: 2 and 4 ranks and two launchers",
          knobs={"nproc": "4", "device": "auto", "select": "not compile", "two_select": "sweep or baseline", "skip": ""}),
    Proof(name="two_launchers", gpus=4, runs=_two_launchers, table=fsdp_tables.scale,
          what="two torchrun launchers on one host meeting through a c10d rendezvous (the multi-node path)",
          fills="Scale: 2 and 4 ranks and two launchers",
          knobs={"nproc": "2", "select": "baseline", "device": "auto", "net": "0", "port": "29517"}),
    Proof(name="fsdp_tp_ranks", gpus=4, runs=_tp_ranks, table=fsdp_tables.tp_ranks,
          what="fsdp_tp under torchrun: every rank's median round, the spread, samples/s, per launch and size",
          fills="Scale: 2 and 4 ranks and two launchers",
          knobs={"sizes": "2 4", "repeat": "2", "streams": "2,4,8,16"}),
    Proof(name="straggler_swap", gpus=2, runs=_straggler_swap, table=fsdp_tables.stragglers,
          what="does the straggler follow its rank or its GPU: one scenario, then the GPUs handed out reversed",
          fills="Scale at two GPUs",
          knobs={"nproc": "2", "select": "explicit_prefetch", "forward": "0,1", "reverse": "1,0"}),
    Proof(name="gate_power", gpus=1, runs=_gate_power, table=gate_tables.gate_power, collect=(".aorta/runs",),
          env={"NCCL_NVLS_ENABLE": "0"},
          what="issue 36: --aorta-runs auto with lean repeats (A/A, calibrated slowdowns), a one-machine baseline judged "
          "on another machine, aorta ab on one GPU and under torchrun (part=save|other|ab|fsdp)",
          fills="The gate with power",
          knobs={"part": "save", "save": "190s", "compare": "165s", "ab": "120s", "ab_same": "200s", "ab_slow": "", "other_slowdown": "0.10", "aa": "1", "slowdown": "0.02", "ab_slowdown": "0.02", "pairs": "2", "nproc": "2",
                 "fsdp_select": "baseline"}),
    Proof(name="gate_budget", gpus=1, runs=_gate_budget, table=_budget_table, collect=(".aorta/runs",),
          env={"NCCL_NVLS_ENABLE": "0"},
          what="issue 55: where a p0 gate's wall goes, the README's commands as given (part=probe|save|aa|slow|ab)",
          fills="A budget spent measuring",
          knobs={"part": "save", "budget": "5m", "ab": "6m", "slowdown": "0.02"}),
    Proof(name="run_cost", gpus=1, runs=_run_cost, table=tables.run_walls, collect=(".aorta/runs",),
          what="issue 45: a run's fixed costs, a lean p0 session's stacks, and gate runs forked against started from "
          "nothing", fills="Cheap repeats: forked runs", knobs={"lean_runs": "2", "budget": "130s"}),
    Proof(name="harness_noise", gpus=1, runs=_harness_noise, table=gate_tables.pool_noise,
          what="issue 36 item 6: pools of fresh processes with CUPTI attached or detached after kernel passes, lean runs, "
          "and the host-bound eager variants pinned to one CPU or not",
          fills="The profiler's residue",
          knobs={"select": "tiny_kernel_stress or hetero_kernels or stream_concurrency", "runs": "2", "eager_runs": "3",
                 "cpu": "3"}),
    Proof(name="history", gpus=1, runs=_history, table=gate_tables.gate_power,
          what="issue 40: GPU runs kept in the history by pytest and by a gate's fresh runs, shown and drawn",
          fills="history.md#Trends and change points", knobs={}),
    Proof(name="history_simulation", gpus=0, table=tables.log_tail("simulation", 40),
          runs=lambda k, work: [Run("simulation", ("python3", "scripts/history_simulation.py", "--repeats", k["repeats"],
                                                  "--seed", k["seed"]))],
          what="issue 40: change points found in simulated 200-run histories built from the recorded pools, step changes "
          "of 2%, 5% and 20% injected", fills="Change points in a run history", knobs={"repeats": "3", "seed": "40"}),
    Proof(name="sweep", gpus=2, runs=_sweep, table=fsdp_tables.sweep_cells,
          what="aorta sweep and aorta report --sweep end to end: a 2x2 NCCL grid of the baseline scenario, two stacks",
          fills="Sweep: NCCL threads x channels", knobs={"nproc": "2", "stack_s": "165", "cell_s": "70"}),
]  # fmt: skip

PROOFS: dict[str, Proof] = {p.name: p for p in _PROOFS}
