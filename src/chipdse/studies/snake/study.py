"""The SNAKE study behind ``chipdse explore`` on a ``kind: snake`` scenario: decode speedups against the baselines
(MAC tree, fixed 48x48 and 8x288 arrays, H100 GPU) at every model, batch and context, multi-PU mode choice,
fixed-mode slowdowns, shape choice vs batch, per-shape buffer demand, the inter-PU link-bandwidth sweep, serving,
and the two exact hardware choices.

The scenario (``instances/scenarios/snake-stratum.yaml``) names the NMP template (SNAKE Sec. 6.1.2), the Table 1
models and batches, and the area assumptions of the shape-set and area-split formulations; every number there
has its source or is marked as an assumption.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd

from chipdse.core.errors import ChipdseError, SpecError
from chipdse.core.scenario import AnyScenario, StudyScenario
from chipdse.core.specs import SnakeScenario
from chipdse.evaluators.energy import EnergyBreakdown
from chipdse.evaluators.snake import SNAKE, SNAKE_FREQ_HZ, SNAKE_SHAPES, SnakeError, decode_gemms, load_card
from chipdse.evaluators.snake_energy import (
    LOGIC_PARTS,
    PEAK_PARTS,
    SnakeEnergy,
    energy_model,
    gpu_step_energy,
    logic_J,
    peak_power_W,
    snake_table,
    step_energy,
    step_power_W,
)
from chipdse.evaluators.snake_pu import (
    BASELINE_DESIGNS,
    NmpTemplate,
    decode_step_s,
    fixed_mode_slowdowns,
    nmp_template,
    schedule,
)
from chipdse.evaluators.snake_serving import GPU, gpu_step_s, prefill_s, simulate, step_table_s
from chipdse.evaluators.systolic import buffer_demand_bytes
from chipdse.formulations.snake_area import AreaSplitProblem
from chipdse.runtime.store import Checkpoints
from chipdse.solvers.config import SolverConfig
from chipdse.solvers.problems import area_split_problem, shape_set_problem
from chipdse.solvers.snake_hw import AREA_SPLIT_METHODS, SHAPE_SET_METHODS, solve_area_split, solve_shape_set
from chipdse.studies.common import Settings, load_kind
from chipdse.studies.pipeline import Progress, Timings, no_progress
from chipdse.studies.snake.artifacts import PAPER_SPEEDUPS, UNCAPPED_DRAM_TBPS, SnakeStudy
from chipdse.studies.snake.claims import claims as snake_claims
from chipdse.studies.snake.summaries import snake_summaries

KIND = "snake"
MAX_SERVING_DECODE_TOKENS = 20_000_000
"""Most decode tokens the serving page simulates (served models x rate_fractions x requests x l_out): about 0.4 us
each (measured: the bundled 1.6 million in 1 s), so about 8 s. The bundled scenario simulates 1,638,400."""


def check(sc: AnyScenario) -> StudyScenario:
    """Check that every model card ``sc`` names is a decode model the SNAKE evaluator supports.

    Raises
    ------
    SpecError
        A card with an unsupported layer type (or that cannot be read), naming the scenario file and field.
    """
    spec = sc.spec
    assert isinstance(sc, StudyScenario) and isinstance(spec, SnakeScenario), "load_kind refuses other kinds"
    for where, m in spec.card_refs():
        try:
            decode_gemms(load_card(sc.named_files.get(where, m)), spec.batches[0], spec.tp)
        except SnakeError as exc:
            raise SpecError(str(sc.path), where, str(exc)) from None
    default = "" if "mode_models" in spec.model_fields_set else " (the default mode_models; set it)"
    for i, m in enumerate(spec.mode_models):
        if m not in spec.models:
            raise SpecError(str(sc.path), f"mode_models[{i}]", f"one of the scenario's models {spec.models} (the "
                            f"mode pages study models whose decode is computed), got {m!r}{default}")
    _check_serving_lengths(sc, spec)
    return sc


def _check_serving_lengths(sc: StudyScenario, spec: SnakeScenario) -> None:
    """``serving.l_in`` / ``l_out`` each within every mode model's context (its card's ``max_position_embeddings``;
    a served model with a shorter context serves lengths cut to it, :func:`served_lengths`), and the serving
    simulation within :data:`MAX_SERVING_DECODE_TOKENS`."""
    sv = spec.serving
    for where, m in spec.card_refs():
        if not where.startswith("mode_models["):
            continue
        context = load_card(sc.named_files.get(where, m)).get("max_position_embeddings")
        for name, value in (("l_in", sv.l_in), ("l_out", sv.l_out)):
            if isinstance(context, int) and value > context:
                raise SpecError(str(sc.path), f"serving.{name}", f"at most {context:,} tokens, the maximum context "
                                f"of {m} ({where}; its card's max_position_embeddings), got {value:,}")
    n_models = len(sv.models or spec.mode_models)
    tokens = n_models * len(sv.rate_fractions) * sv.requests * sv.l_out
    if tokens > MAX_SERVING_DECODE_TOKENS:
        raise SpecError(str(sc.path), "serving.l_out", f"at most {MAX_SERVING_DECODE_TOKENS:,} decode tokens "
                        f"simulated in all (models x rate_fractions x requests x l_out = {n_models} x "
                        f"{len(sv.rate_fractions)} x {sv.requests:,} x {sv.l_out:,} = {tokens:,}; each costs about "
                        "0.4 us of event simulation): lower l_out, requests or rate_fractions")


def load(path: Path | None) -> StudyScenario:
    """A ``kind: snake`` scenario file, loaded (:func:`chipdse.studies.common.load_kind`) and :func:`check`-ed;
    any problem is a one-line SpecError naming the file and field."""
    return check(load_kind(path, KIND))


def label(sc: StudyScenario) -> str:
    """What :func:`run` does, in one line."""
    return f"SNAKE study: {len(sc.spec.models)} models x {len(sc.spec.batches)} batches, shape set, area split"


def decode_tables(spec: SnakeScenario, t: NmpTemplate, em: SnakeEnergy | None = None, energy: bool = True
                  ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Decode speedups, per-operator schedules, fixed-mode slowdowns and energies of every model, batch and context.

    Parameters
    ----------
    spec : SnakeScenario
    t : NmpTemplate
    em : SnakeEnergy, optional
        Per-action energies (default: :func:`evaluators.snake_energy.energy_model` of ``t``; the link sweep passes
        the scenario template's, so the energy per bit stays that of the physical link).
    energy : bool
        Compute the energies (False: the latencies only, the ``energy`` table empty and no ``energy_ratio``).

    Returns
    -------
    (speedups, modes, slowdowns, energy) : tuple of pandas.DataFrame
        ``speedups``: model, batch, context, baseline (:data:`BASELINES`), speedup (baseline step / SNAKE's),
        snake_step_s, energy_ratio (baseline energy / SNAKE's: logic die for the NMP baselines, as SNAKE Sec. 6.3;
        the H100's whole energy over SNAKE's logic die plus DRAM), snake_step_J and baseline_step_J (logic die;
        the H100's whole; one device of the TP group), snake_tokens_per_J and baseline_tokens_per_J (the batch's
        tokens over the TP group's energy, ``batch / (tp x step_J)``), snake_power_W (SNAKE's
        average logic-die power over the step).
        ``modes`` (mode models only): model, batch, context, the columns of
        :func:`chipdse.evaluators.snake_pu.schedule` and ``shape`` (short x long side). ``slowdowns``: model, batch,
        context, mode, slowdown (SNAKE Fig. 13b). ``energy``: model, batch, context, design, step_s, one column
        ``<part>_J`` per energy part, logic_J, total_J (one device), tokens_per_J (``batch / (tp x logic_J)``: the
        step's tokens over the logic dies of the TP group; the H100's whole), tokens_per_J_total (with DRAM) and the
        average logic power per Fig. 11 component ``<part>_W``.
    """
    em = em or energy_model(t)
    sp, modes, slow, rows = [], [], [], []
    for m in spec.models:
        card = load_card(m)
        for b in spec.batches:
            for ctx in spec.contexts:
                ops = decode_gemms(card, b, spec.tp, context=ctx)
                key = {"model": m, "batch": b, "context": ctx}
                runs = {d.name: step_energy(ops, d, t, em) if energy else (decode_step_s(ops, d, t), None)
                        for d in (SNAKE, *BASELINE_DESIGNS)}
                gpu_s = gpu_step_s(ops, spec.serving.gpu_efficiency)
                runs[GPU] = (gpu_s, gpu_step_energy(ops, gpu_s, em) if energy else None)
                ours_s, ours = runs[SNAKE.name]
                for name, (step_s, e) in runs.items():
                    row = {**key, "baseline": name, "speedup": step_s / ours_s, "snake_step_s": ours_s}
                    if e is not None and ours is not None:
                        rows.append(_energy_row(key, name, step_s, e, spec.tp))
                        mine = e.total_J if name == GPU else logic_J(e)
                        row |= {"energy_ratio": e.total_J / ours.total_J if name == GPU else mine / logic_J(ours),
                                "snake_step_J": logic_J(ours), "baseline_step_J": mine,
                                "snake_tokens_per_J": b / (spec.tp * logic_J(ours)),
                                "baseline_tokens_per_J": b / (spec.tp * mine),
                                "snake_power_W": logic_J(ours) / ours_s}
                    if name != SNAKE.name:
                        sp.append(row)
                if m in spec.mode_models:
                    for r in schedule(ops, SNAKE, t).to_dict("records"):
                        modes.append({**key, **r, "shape": f"{min(r['rows'], r['cols'])}x{max(r['rows'], r['cols'])}"})
                    slow += [{**key, "mode": mode, "slowdown": x} for mode, x in fixed_mode_slowdowns(ops, t).items()]
    return pd.DataFrame(sp), pd.DataFrame(modes), pd.DataFrame(slow), pd.DataFrame(rows)


def _energy_row(key: dict[str, Any], name: str, step_s: float, e: EnergyBreakdown, tp: int) -> dict[str, Any]:
    """One row of :func:`decode_tables`' ``energy`` table (its docstring names the columns)."""
    logic = e.total_J if name == GPU else logic_J(e)
    watts = {} if name == GPU else {f"{p}_W": v for p, v in step_power_W(e, step_s).items()}
    return {**key, "design": name, "step_s": step_s, **{f"{p}_J": v for p, v in e.parts_J.items()}, "logic_J": logic,
            "total_J": e.total_J, "tokens_per_J": key["batch"] / (tp * logic),
            "tokens_per_J_total": key["batch"] / (tp * e.total_J),
            **watts}


def power_table(t: NmpTemplate, em: SnakeEnergy, energy: pd.DataFrame) -> pd.DataFrame:
    """The logic-die power of every NMP design against the thermal budget (SNAKE Sec. 6.2, Fig. 11), W.

    One row per design: its power at full activity per Fig. 11 component (``<part>_W``,
    :func:`evaluators.snake_energy.peak_power_W`) and ``peak_W`` (their sum; SNAKE's is the paper's 61.8 W by
    construction), ``decode_max_W`` (the highest average logic power over the study's decode steps), the budget
    at the template's DRAM bandwidth (``budget_W``) and at the uncapped :data:`UNCAPPED_DRAM_TBPS`
    (``budget_uncapped_W``), and whether the peak fits each (``fits``, ``fits_uncapped``).
    """
    rows = []
    budget, uncapped = em.logic_budget_W(t.dram_TBps), em.logic_budget_W(UNCAPPED_DRAM_TBPS)
    watts = [f"{p}_W" for p in PEAK_PARTS]
    for d in (SNAKE, *BASELINE_DESIGNS):
        peak = peak_power_W(d, t, em)
        g = energy[energy["design"] == d.name] if not energy.empty else energy
        decode_max = float(g[watts].sum(axis=1).max()) if not g.empty else float("nan")
        total = sum(peak.values())
        rows.append({"design": d.name, **{f"{p}_W": v for p, v in peak.items()}, "peak_W": total,
                     "decode_max_W": decode_max, "budget_W": budget, "budget_uncapped_W": uncapped,
                     "fits": total <= budget, "fits_uncapped": total <= uncapped})
    return pd.DataFrame(rows)


def link_sweep(spec: SnakeScenario, t: NmpTemplate) -> dict[str, pd.DataFrame]:
    """:func:`decode_tables` at every ``spec.link_sweep_GBps`` (the inter-PU link bandwidth, which the paper does not
    give), each table with a ``link_GBps`` column; keys ``speedups``, ``modes``, ``slowdowns``."""
    parts: dict[str, list[pd.DataFrame]] = {"speedups": [], "modes": [], "slowdowns": []}
    for link in spec.link_sweep_GBps:
        tables = decode_tables(spec, dataclasses.replace(t, link_GBps=float(link)), energy=False)[:3]
        for name, tab in zip(parts, tables, strict=True):
            parts[name].append(tab.assign(link_GBps=float(link)))
    return {name: pd.concat(tabs, ignore_index=True) for name, tabs in parts.items()}


def buffer_table(spec: SnakeScenario, shapes: pd.DataFrame) -> pd.DataFrame:
    """Weight-side and activation-side buffer demand of every logical shape (SNAKE Fig. 14b), KiB, with the share
    of the mode models' decode time each shape takes.

    OS runs a shape with the batch on its short side as rows (8x512: 512 weights enter per cycle), IS with it as
    columns (512x8: 512 weights enter along the rows); :func:`evaluators.systolic.buffer_demand_bytes` at the area
    split's DRAM latency (``area_split.dram_latency_ns``) in SNAKE cycles (800 MHz), FP16.
    """
    latency = spec.area_split.dram_latency_ns * 1e-9 * SNAKE_FREQ_HZ
    share = (shapes.groupby(["model", "shape"])["total_s"].sum() / shapes.groupby("model")["total_s"].sum()
             if not shapes.empty else pd.Series(dtype=float))
    rows = []
    for r, c in sorted({(min(a, b), max(a, b)) for a, b in SNAKE_SHAPES}):
        label = f"{r}x{c}"
        row: dict[str, Any] = {"shape": label}
        for flow, (rr, cc) in (("os", (r, c)), ("is", (c, r))):
            w, a = buffer_demand_bytes(rr, cc, flow, latency, 2)
            row |= {f"{flow}_weight_kib": w / 1024, f"{flow}_activation_kib": a / 1024}
        for m in spec.mode_models:
            row[f"share_{m}"] = float(share.get((m, label), 0.0))
        rows.append(row)
    return pd.DataFrame(rows)


def area_energy_table(spec: SnakeScenario, ap: AreaSplitProblem, t: NmpTemplate, em: SnakeEnergy) -> pd.DataFrame:
    """SNAKE Fig. 4a's energy line: for each PE array of the area split, the largest buffer the core's area leaves,
    and the decode step of the area-split workload with it (latency, s; logic-die energy by part, J).

    The buffer bounds the core's DRAM streaming rate by Little's law, ``min(24 TB/s / cores, (b / 2) / L)``, as in
    :func:`chipdse.solvers.problems.area_split_problem`; a starved array computes longer and its clocked PEs cost
    energy the whole time. Arrays with no buffer that fits are left out.
    """
    a = spec.area_split
    ops = decode_gemms(load_card(a.model), a.batch, spec.tp)
    rows = []
    for i, (r, c) in enumerate(ap.pe_configs):
        fits = [j for j in range(len(ap.buffer_kb)) if ap.area_mm2(i, j) <= ap.area_budget_mm2]
        if not fits:
            continue
        kb = ap.buffer_kb[max(fits, key=lambda j: ap.buffer_kb[j])]
        rate = min(t.dram_TBps * 1e12 / t.cores, kb * 1024 / 2 / (a.dram_latency_ns * 1e-9))
        tt = dataclasses.replace(t, dram_TBps=rate * t.cores / 1e12)
        design = dataclasses.replace(SNAKE, name=f"{r}x{c}", shapes=((r, c), (c, r)))
        step_s, e = step_energy(ops, design, tt, em)
        rows.append({"array": f"{r}x{c}", "buffer_kb": kb, "step_s": step_s, "logic_J": logic_J(e),
                     **{f"{p}_J": e.parts_J.get(p, 0.0) for p in LOGIC_PARTS}})
    return pd.DataFrame(rows)


def run(sc: StudyScenario, settings: Settings | None = None, progress: Progress = no_progress,
        checkpoints: Checkpoints | None = None) -> SnakeStudy:
    """Compute every table of the SNAKE report (SNAKE Secs. 6.3-6.6, Figs. 4a, 10, 12-14).

    Parameters
    ----------
    sc : StudyScenario
        A ``kind: snake`` scenario (:func:`load`).
    settings : Settings, optional
        Work limit and wall cap per exact solve (default: the scenario's ``work_limit`` / ``time_limit_s``) and
        seed: of the solvers (default 0) and, when given, of the serving simulation's arrivals in place of
        ``serving.seed`` (the result's scenario then holds it).
    progress : callable(str, float), optional
        Called with each stage's description.
    checkpoints : Checkpoints, optional
        Refused: the study runs in seconds and keeps no stages (:attr:`chipdse.studies.registry.Study.keeps_stages`).

    Raises
    ------
    SnakeError
        A missing card or unsupported layer type.
    """
    if checkpoints is not None:
        msg = f"store / fresh: only HYDRA scenarios keep finished stages; {sc.path} is a kind: {KIND} study"
        raise ChipdseError(msg)
    settings = settings or Settings()
    assert isinstance(sc.spec, SnakeScenario)
    if settings.seed is not None:  # the command line's seed drives the study's one random draw (serving arrivals)
        sc = dataclasses.replace(sc, spec=sc.spec.model_copy(update={"serving": sc.spec.serving.model_copy(
            update={"seed": settings.seed})}))
    spec = sc.spec
    assert isinstance(spec, SnakeScenario)
    t = nmp_template(spec.template)
    stages = Timings()
    shapes = pd.DataFrame()
    progress("SNAKE: decode speedups and modes", 0.0)
    with stages.stage("decode_s"):
        em = energy_model(t, snake_table(spec.energy.table, f"{sc.path}: energy.table"))
        sp, md, slow, energy = decode_tables(spec, t, em)
        power = power_table(t, em, energy)
        if not md.empty:
            shapes = md.groupby(["model", "batch", "shape"], as_index=False)["total_s"].sum()
            shapes["share"] = shapes["total_s"] / shapes.groupby(["model", "batch"])["total_s"].transform("sum")
        buffers = buffer_table(spec, shapes)
    progress(f"SNAKE: link bandwidth sweep ({len(spec.link_sweep_GBps)} values)", 0.0)
    with stages.stage("link_sweep_s"):
        sweep = link_sweep(spec, t)
    cfg = SolverConfig.of(spec, settings.work_limit, settings.time_limit_s,
                          **({} if settings.seed is None else {"seed": settings.seed}))
    shape_rows = []
    progress(f"SNAKE: shape set ({cfg.limits_text()} per exact solve)", 0.0)
    with stages.stage("shape_set_s"):
        base = shape_set_problem(spec, spec.shape_set.budgets_mm2[0])  # the time matrix does not depend on the budget
        for budget in spec.shape_set.budgets_mm2:
            prob = dataclasses.replace(base, area_budget_mm2=budget, name=f"{spec.name}-shape-set-{budget:g}mm2")
            for method in SHAPE_SET_METHODS:
                sol = solve_shape_set(prob, method, cfg)
                shape_rows.append({"budget_mm2": budget, "method": method, "solution": sol,
                                   "shapes": [] if sol.decision is None else
                                   [prob.shapes[s] for s in sorted(sol.decision)],
                                   "area_mm2": None if sol.decision is None else prob.area_mm2(sol.decision)})
    progress("SNAKE: area split", 0.0)
    with stages.stage("area_split_s"):
        ap = area_split_problem(spec)
        area = [solve_area_split(ap, method, cfg) for method in AREA_SPLIT_METHODS]
        grid = pd.DataFrame(ap.latency_s, index=[f"{r}x{c}" for r, c in ap.pe_configs], columns=list(ap.buffer_kb))
        area_energy = area_energy_table(spec, ap, t, em)
    progress("SNAKE: serving simulation", 0.0)
    with stages.stage("serving_s"):
        serving = serving_table(spec)
    result = SnakeStudy(sc, cfg, sp, md, slow, shapes, shape_rows, area, grid, ap, serving, buffers, sweep,
                        stages.wall_s, stages.cpu_s, energy, power, area_energy, em)
    with stages.stage("claims_s"):
        result = dataclasses.replace(result, summaries=snake_summaries(result))
        return dataclasses.replace(result, claims=snake_claims(result))
def summary(s: SnakeStudy) -> dict[str, Any]:
    """Headline numbers: SNAKE's average decode speedup over each baseline, next to the paper's (Sec. 6.3)."""
    assert s.summaries is not None, "run() computes the summaries"
    return {"average_speedups": s.summaries.average_speedups, "paper_speedups": PAPER_SPEEDUPS,
            "fidelity": None if s.claims is None else s.claims.fidelity()}


def warnings(sc: StudyScenario) -> list[str]:
    """What ``chipdse explore`` says before it runs the study (one line, no ``warning:`` prefix; none when nothing
    to say): the models of ``models`` whose card's ``max_position_embeddings`` is below the longest of ``contexts``.
    Their decode steps are still timed at those KV lengths (SNAKE Fig. 13 runs OPT-66B, a 2,048-position model, at
    4K-16K: a hardware study of the step's cost, not a claim that the model attends that far)."""
    spec = sc.spec
    assert isinstance(spec, SnakeScenario), "check() types it"
    short = []
    for where, m in spec.card_refs():
        context = load_card(sc.named_files.get(where, m)).get("max_position_embeddings")
        if where.startswith("models[") and isinstance(context, int) and max(spec.contexts) > context:
            short.append(f"{m} ({context:,}, {where})")
    if not short:
        return []
    return [f"contexts: {', '.join(f'{c:,}' for c in spec.contexts)} tokens: longer than the maximum context (the "
            f"card's max_position_embeddings) of {' and '.join(short)}; their decode steps are timed at those "
            "KV-cache lengths all the same, as SNAKE Fig. 13 does"]


def headline(s: SnakeStudy) -> list[str]:
    """The lines ``chipdse explore`` prints: the average speedup over each baseline."""
    assert s.summaries is not None, "run() computes the summaries"
    return [f"SNAKE vs {b}: {v:.2f}x average decode speedup" for b, v in s.summaries.average_speedups.items()]


def served_lengths(card: dict, l_in: int, l_out: int) -> tuple[int, int]:
    """The (prompt, output) lengths a model serves: unchanged when each fits the card's ``max_position_embeddings``
    (as :func:`check` asks of the mode models) or the card states none; otherwise cut to fit it together, the output
    to at most half, e.g. OPT-66B's 2,048 positions serve 1,024 + 1,024 of an 8K + 1K setting."""
    context = card.get("max_position_embeddings")
    if not isinstance(context, int) or (l_in <= context and l_out <= context):
        return l_in, l_out
    out = min(l_out, max(1, context // 2))
    return max(1, context - out), out


def serving_table(spec: SnakeScenario) -> pd.DataFrame:
    """Mean E2E and TBT per model, design (SNAKE, the three NMP baselines, the H100) and arrival rate (SNAKE
    Fig. 10), by event simulation; the rate is a fraction of SNAKE's capacity (the lower of prefill and decode).

    Each row also has the design's own ``capacity_rps`` (the lower of the GPU prefill rate and its decode rate at
    the largest batch, req/s) and ``overloaded`` (the offered rate is at or above it: the design queues without
    bound, so its latency grows with the number of requests simulated and is no steady-state number)."""
    sv, t = spec.serving, nmp_template(spec.template)
    rows = []
    for m in sv.models or spec.mode_models:
        card = load_card(m)
        l_in, l_out = served_lengths(card, sv.l_in, sv.l_out)
        pre = prefill_s(card, l_in, spec.tp, sv.gpu_efficiency)
        tables = {getattr(d, "name", d): step_table_s(card, d, t, sv.max_batch, l_in + l_out / 2, spec.tp,
                                                      sv.gpu_efficiency)
                  for d in (SNAKE, *BASELINE_DESIGNS, GPU)}
        own = {name: min(1.0 / pre, sv.max_batch / (l_out * tab[sv.max_batch])) for name, tab in tables.items()}
        capacity = own[SNAKE.name]
        for f in sv.rate_fractions:
            for name, tab in tables.items():
                r = simulate(tab, pre, f * capacity, l_out, sv.requests, sv.seed)
                rows.append({"model": m, "l_in": l_in, "l_out": l_out, "rate_fraction": f, "rate_rps": f * capacity,
                             "design": name, "e2e_s": r.e2e_s, "tbt_s": r.tbt_s, "prefill_s": pre,
                             "capacity_rps": own[name], "overloaded": bool(f * capacity >= own[name])})
    return pd.DataFrame(rows)
