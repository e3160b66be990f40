"""HYDRA's evaluation protocol as a function API (Sec. VI-B/D/E): the ablation, scheduler and placement studies on
each workload's own B* and M_T, a per-workload table out (what ``benchmarks/bench_hydra_claims.py`` and the explore
report's policy pages read)."""

from __future__ import annotations

import pandas as pd

from chipdse.core.scenario import LoadedScenario
from chipdse.runtime.parallel import Backend
from chipdse.solvers.config import SolverConfig
from chipdse.studies.hydra.simstage import protocol_workloads, run_policy_jobs, workload_policy_jobs
from chipdse.studies.hydra.simstudy import policy_summary
from chipdse.studies.pipeline import Progress


def policy_study(workloads: list[LoadedScenario], cfg: SolverConfig | None = None, backend: Backend | None = None,
                 progress: Progress | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Simulate the ablation (Fig. 9), scheduler (Fig. 12) and placement (Fig. 10) studies on every workload.

    Parameters
    ----------
    workloads : list of LoadedScenario
        One scenario per workload (model and dataset), e.g. :func:`protocol_workloads`; each one's
        ``simulation`` settings (``warmup_s``, ``measure_s``, ``load``, ``min_completed``, ``roles``) and
        ``estimator`` settings (the B* / M_T pick: HYDRA picks under static batching) apply.
    cfg : SolverConfig, optional
        Placement and mapping limits; default: the first workload's (``SolverConfig.of``).
    backend : Backend, optional
        Where the simulations run; default: in-process.
    progress : callable(str, float), optional
        Called once per workload.

    Returns
    -------
    (pandas.DataFrame, list of str)
        :func:`chipdse.studies.hydra.simstudy.policy_rows`' table (one row per model, dataset, role, study and variant:
        throughput tok/s, mean TTFT s, finished requests, offered ``rate_rps``, ``valid``, ``invalid_reason``;
        :func:`chipdse.studies.hydra.simstudy.policy_summary` averages it) and the notes of workloads or runs left out.

    Raises
    ------
    ValueError
        No workload.
    """
    if not workloads:
        msg = "policy_study needs at least one workload"
        raise ValueError(msg)
    cfg = cfg or SolverConfig.of(workloads[0].spec, seed=workloads[0].spec.seed)
    skipped: list[str] = []
    jobs = []
    for scw in workloads:
        if progress is not None:
            progress(f"B* and M_T of {scw.model.key} on {scw.workload.name}", 0.0)
        jobs += workload_policy_jobs(scw, cfg, skipped)
    table = run_policy_jobs(jobs, backend or Backend.in_process(), workloads[0].spec.simulation.min_completed,
                            skipped)
    return table, skipped


def protocol_study(sc: LoadedScenario, cfg: SolverConfig | None = None, backend: Backend | None = None,
                   progress: Progress | None = None) -> tuple[pd.DataFrame, dict[str, float], list[str]]:
    """:func:`policy_study` on every ``simulation.models`` x ``simulation.datasets`` workload of ``sc``
    (``instances/scenarios/hydra-protocol.yaml``: HYDRA's 12) and its :func:`policy_summary`.

    Returns
    -------
    (pandas.DataFrame, dict, list of str)
        The per-workload table, the averages (geometric means of per-workload ratios, invalid workloads left out
        and counted) and the notes.
    """
    table, skipped = policy_study(protocol_workloads(sc), cfg, backend, progress)
    return table, policy_summary(table), skipped
