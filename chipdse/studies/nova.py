"""The NOVA study behind ``chipdse explore`` on a ``kind: nova`` scenario: decode step, throughput and E2E latency
of NOVA and its baselines, capacity (longest context that fits), and the expert-to-tier split against k* and 1:9.

The scenario (``instances/scenarios/nova-nemotron3-nano.yaml``) names the NOVA Table II models, batches and
input / output lengths, and the system assumptions the paper leaves open (GPU efficiency, synchronization cost,
in-die NMP roofline).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field, PositiveFloat, PositiveInt

from chipdse.core.errors import SpecError
from chipdse.core.specs import _Spec, load_spec
from chipdse.evaluators.nova_model import load_nova_model
from chipdse.evaluators.nova_system import DESIGNS, SYSTEM, NovaSystem, e2e, longest_context, memory_bytes
from chipdse.evaluators.snake import SnakeError

PAPER = {"throughput_x": 4.5, "e2e_reduction": 0.698}
"""NOVA's headline against the GPU baseline: 4.5x throughput and 69.8% lower E2E latency on average."""


class NovaSystemSpec(_Spec):
    """System assumptions (NOVA Sec. VI-A fixes the hardware; these are what it leaves open)."""

    gpu_efficiency: float = Field(0.7, gt=0, le=1, description="Sustained share of the H100's 989 TFLOPS.")
    sync_us: float = Field(2.0, ge=0, description="One GPU <-> NMP synchronization with its hand-off, us.")
    allreduce_us: float = Field(5.0, ge=0, description="Tensor-parallel all-reduce per layer with several GPUs, us.")
    in_die_TFLOPS: PositiveFloat = Field(4.0, description="AttAcc / PIMBA in-die compute per cube (16 GEMV units "
                                         "per bank against Tier-1's 128: 32 / 8 TFLOPS).")
    in_die_TBps: PositiveFloat = Field(2.0, description="Their bank-level read bandwidth per cube (256-bit reads "
                                       "against Tier-1's 2 Kb: 16 / 8 TB/s).")


class ExpertTableSpec(_Spec):
    """The expert-split comparison (NOVA Fig. 16): routing kinds x expert counts."""

    batch: PositiveInt = 64
    top_k: PositiveInt = 8
    experts: list[PositiveInt] = Field([16, 128, 512], min_length=1)
    routing: list[Literal["uniform", "zipf", "concentrated"]] = ["uniform", "zipf", "concentrated"]
    expert_bytes: PositiveFloat = Field(3 * 2048 * 768 * 2.0, description="Qwen3-30B-A3B-sized expert, bytes.")
    seed: int = 42


class NovaScenario(_Spec):
    """A NOVA study scenario (``kind: nova``)."""

    kind: Literal["nova"]
    name: str
    models: list[str] = Field(min_length=1, description="Model cards (instances/models), NOVA Table II.")
    batches: list[PositiveInt] = Field([32, 64], min_length=1)
    lengths: list[tuple[PositiveInt, PositiveInt]] = Field([(2048, 512), (4096, 1024), (8192, 2048)], min_length=1,
                                                           description="(input, output) tokens per request.")
    gpus: dict[str, PositiveInt] = Field(default_factory=dict, description="GPUs (each with five cubes) per model "
                                         "that needs more than one; NOVA runs Nemotron3-Super on two H100s.")
    system: NovaSystemSpec = NovaSystemSpec()
    experts: ExpertTableSpec = ExpertTableSpec()
    time_limit_s: PositiveFloat = 20.0

    def nova_system(self) -> NovaSystem:
        """The evaluator's :class:`NovaSystem` with this scenario's assumptions."""
        return replace(SYSTEM, gpu_efficiency=self.system.gpu_efficiency, sync_s=self.system.sync_us * 1e-6,
                       allreduce_s=self.system.allreduce_us * 1e-6)


def load_nova_scenario(path: Path) -> NovaScenario:
    """Load a NOVA scenario; every model card must exist and be a GQA / Mamba-2 / MoE model.

    Raises
    ------
    SpecError, SnakeError
        A malformed field (naming file and field), a missing card or an unsupported layer type.
    """
    spec = load_spec(NovaScenario, path)
    for i, m in enumerate(spec.models):
        try:
            load_nova_model(m)
        except (SnakeError, SpecError) as exc:
            msg = exc.expected if isinstance(exc, SpecError) else str(exc)
            raise SpecError(str(path), f"models[{i}]", msg) from None
    unknown = sorted(set(spec.gpus) - set(spec.models))
    if unknown:
        raise SpecError(str(path), "gpus", f"keys among the scenario's models, got {unknown}")
    return spec


@dataclass
class NovaStudy:
    """Every table of the NOVA report."""

    spec: NovaScenario
    runs: pd.DataFrame
    capacity: pd.DataFrame
    memory: pd.DataFrame
    experts: pd.DataFrame = field(default_factory=pd.DataFrame)
    timings_s: dict[str, float] = field(default_factory=dict)


def _designs(spec: NovaScenario) -> list:
    s = spec.system
    return [replace(d, in_die_flops=s.in_die_TFLOPS * 1e12, in_die_Bps=s.in_die_TBps * 1e12) for d in DESIGNS]


def run_nova_study(spec: NovaScenario, time_limit_s: float | None = None) -> NovaStudy:
    """Decode / E2E runs, capacity and the expert-split table (NOVA Figs. 11, 15, 16)."""
    designs = _designs(spec)
    t0 = time.perf_counter()
    runs, cap, mem = [], [], []
    for key in spec.models:
        model = load_nova_model(key)
        system = replace(spec.nova_system(), gpus=spec.gpus.get(key, 1))
        for b in spec.batches:
            for l_in, l_out in spec.lengths:
                for d in designs:
                    r = e2e(model, d, b, l_in, l_out, system)
                    runs.append({"model": key, "gpus": system.gpus, "batch": b, "l_in": l_in, "l_out": l_out,
                                 "design": d.name, **r})
            for d in designs:
                cap.append({"model": key, "batch": b, "design": d.name, "capacity_GB": system.capacity_bytes(d) / 1e9,
                            "longest_context": longest_context(model, d, b, system)})
            l_in, l_out = spec.lengths[-1]
            per_pch = system.all_cubes * system.cube.pseudo_channels_total
            for kind, v in memory_bytes(model, b, l_in + l_out).items():
                mem.append({"model": key, "batch": b, "context": l_in + l_out, "kind": kind,
                            "GB": v / 1e9, "MB_per_pseudo_channel": v / per_pch / 1e6})
    timings = {"systems_s": time.perf_counter() - t0}
    t1 = time.perf_counter()
    experts = expert_table(spec, time_limit_s or spec.time_limit_s)
    timings["expert_split_s"] = time.perf_counter() - t1
    return NovaStudy(spec, pd.DataFrame(runs), pd.DataFrame(cap), pd.DataFrame(mem), experts, timings)


def expert_table(spec: NovaScenario, time_limit_s: float) -> pd.DataFrame:
    """Every expert-split method on each routing kind x expert count: makespan, gap to the exact one, time."""
    from chipdse.formulations.expert_split import ExpertSplitProblem
    from chipdse.solvers.config import SolverConfig
    from chipdse.solvers.expert_split import MAX_BRUTE_FORCE_EXPERTS, routing_counts, solve_expert_split

    e = spec.experts
    cfg = SolverConfig(time_limit_s=time_limit_s, threads=2, seed=0)
    rows = []
    for kind in e.routing:
        for n in e.experts:
            tokens = routing_counts(n, e.batch, min(e.top_k, n), kind, seed=e.seed)
            prob = ExpertSplitProblem((e.expert_bytes,) * n, tuple(int(t) for t in tokens), name=f"{kind}-{n}")
            methods = ["milp-highs", "cpsat", "nova-kstar", "static-1-9"]
            if n <= MAX_BRUTE_FORCE_EXPERTS:
                methods.insert(2, "brute-force")
            sols = {m: solve_expert_split(prob, m, cfg) for m in methods}
            exact = [s.objective for m, s in sols.items() if m in ("milp-highs", "cpsat", "brute-force")
                     and s.objective is not None]
            best = min(exact) if exact else np.nan
            for m, s in sols.items():
                rows.append({"routing": kind, "experts": n, "method": m, "status": s.status.value,
                             "makespan_us": None if s.objective is None else s.objective * 1e6,
                             "gap": None if s.objective is None else s.objective / best - 1, "solve_s": s.wall_s})
    return pd.DataFrame(rows)


def ratios_vs_gpu(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run where the GPU fits: each design's throughput over the GPU's and its E2E reduction."""
    gpu = runs[runs["design"] == "GPU"].set_index(["model", "batch", "l_in", "l_out"])
    out = []
    for r in runs[runs["design"] != "GPU"].to_dict("records"):
        g = gpu.loc[(r["model"], r["batch"], r["l_in"], r["l_out"])]
        if not (g["fits"] and r["fits"]):
            continue
        out.append({**{k: r[k] for k in ("model", "batch", "l_in", "l_out", "design")},
                    "throughput_x": r["throughput_tps"] / g["throughput_tps"],
                    "e2e_reduction": 1 - r["e2e_s"] / g["e2e_s"]})
    return pd.DataFrame(out)
