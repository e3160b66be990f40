"""NOVA's claims against this run, and the sweeps behind the rows that differ.

Runs the NOVA study on ``instances/scenarios/nova-nemotron3-nano.yaml`` (the code ``chipdse explore`` and its
report use), prints ``render_text(rows, paper="NOVA")`` (:mod:`chipdse.studies.nova.claims`), then re-runs the
study over the assumptions the paper does not give (the GPU's sustained share per operator class, the in-die PIM's
bank-level bandwidth) and prints the claims each one moves. Wall and CPU seconds per run.
Run: python benchmarks/bench_nova_claims.py [--no-sweep]
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

from chipdse.core.paths import instances_dir
from chipdse.evaluators import nova_system
from chipdse.evaluators.energy import load_energy_table
from chipdse.evaluators.nova_energy import nova_energy_from
from chipdse.evaluators.nova_system import HBM4_EXTERNAL_BPS
from chipdse.studies.claims import claim_rows, render_text
from chipdse.studies.nova import claims as nova_claims
from chipdse.studies.nova import study as nova

SCENARIO = instances_dir() / "scenarios" / "nova-nemotron3-nano.yaml"
ENERGY_KEYS = frozenset(load_energy_table("common", "nova").keys())
"""Sweep fields that name an energy constant (instances/energy) rather than a scenario field."""

SWEEPS: tuple[tuple[str, tuple[float, ...], tuple[str, ...]], ...] = (
    ("gpu_ssm_efficiency", (0.05, 0.1, 0.2, 0.3),
     ("throughput_x", "pimba_vs_gpu_hybrid", "nova_vs_pimba_hybrid", "e2e_change")),
    ("gpu_expert_efficiency", (0.4, 0.7, 1.0),
     ("throughput_x", "qwen_throughput_x", "nova_vs_pimba_hybrid", "gain_grows_with_batch")),
    ("gpu_attention_efficiency", (0.3, 0.35, 0.4, 0.5, 0.7),
     ("throughput_x", "attacc_vs_gpu_min", "gain_grows_with_length")),
    ("nova_gpu_onchip", (0.0, 2.0, 4.0, 8.0),
     ("energy_x", "energy_hybrid_x", "energy_qwen_x", "duplex_energy_qwen_x", "base_die_energy_qwen_x",
      "in_die_energy_qwen_x", "nmp_energy_share_nano", "nmp_energy_share_super")),
    ("nova_peri_activation", (409.0, 818.1, 1636.2, 3272.4),
     ("energy_x", "energy_hybrid_x", "energy_qwen_x", "duplex_over_nova_energy_qwen", "nmp_energy_share_nano")),
    ("hbm4_activation", (909.0, 1818.0, 3636.0),
     ("in_die_energy_qwen_x", "duplex_energy_qwen_x", "base_die_energy_qwen_x", "energy_qwen_x")),
    ("in_die_scale", (1.0, 2.0, 2.6, 9.0, 16.0),
     ("gqa_vs_attacc", "gqa_vs_pimba", "ssm_vs_pimba", "pimba_vs_gpu_min", "in_die_only_nano",
      "nova_vs_in_die_base_die_nano", "nova_vs_in_die_base_die_qwen")),
)
"""(scenario system field, ``in_die_scale`` (x the cube's 2.048 TB/s, at 1 FLOP/B) or an energy constant of
``instances/energy/nova.yaml``, values, claims printed)."""


def _run(sc: Any, energy: dict[str, float] | None = None) -> tuple[dict[str, Any], dict[str, str], float, float]:
    """The study's measured claims and notes, with its wall and CPU seconds; ``energy`` replaces energy constants
    (key -> value in its unit) for this run (the study builds its system from ``nova_system.SYSTEM``)."""
    w0, c0 = time.perf_counter(), time.process_time()
    saved = nova_system.SYSTEM
    if energy:
        table = load_energy_table("common", "nova")
        table = replace(table, constants={**table.constants, **{k: replace(table.constant(k), value=v)
                                                                 for k, v in energy.items()}})
        nova_system.SYSTEM = replace(saved, energy=nova_energy_from(table))
    try:
        study = nova.run(sc)
    finally:
        nova_system.SYSTEM = saved
    measured, notes = nova_claims.measure(study)
    return measured, notes, time.perf_counter() - w0, time.process_time() - c0


def _with(sc: Any, field: str, value: float) -> Any:
    """``sc`` with one system assumption changed."""
    system = sc.spec.system
    if field == "in_die_scale":
        tb = value * HBM4_EXTERNAL_BPS / 1e12
        update = {"in_die_TBps": tb, "in_die_TFLOPS": tb}
    else:
        update = {field: value}
    return replace(sc, spec=sc.spec.model_copy(update={"system": system.model_copy(update=update)}))


def main() -> None:
    sc = nova.load(SCENARIO)
    measured, notes, wall, cpu = _run(sc)
    print(f"NOVA claims, {SCENARIO.name}: {wall:.1f} s wall, {cpu:.1f} s CPU")
    print(render_text(claim_rows(measured, notes, claims=nova_claims.NOVA_CLAIMS), paper="NOVA"))
    if "--no-sweep" in sys.argv:
        return
    for field, values, keys in SWEEPS:
        print(f"\nsweep {field}: " + " | ".join(keys))
        for v in values:
            energy = field in ENERGY_KEYS
            m, _, wall, cpu = _run(sc, {field: v}) if energy else _run(_with(sc, field, v))
            cells = " | ".join("-" if m.get(k) is None else f"{m[k]:.2f}" for k in keys)
            print(f"  {v:g}: {cells}   ({wall:.0f} s wall, {cpu:.0f} s CPU)")


if __name__ == "__main__":
    main()
