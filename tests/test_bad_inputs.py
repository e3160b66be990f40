"""Every kind of bad input is one ``error: ...`` line naming the file (or option) and the field, exit code 2,
within 10 s, and no output folder left behind (issue 14, "Validation at the boundary").

Each case copies the bundled instances into ``tmp_path``, changes one field and runs the command line in-process
(:func:`chipdse.cli.invoke`, what the ``chipdse`` entry point runs); a few cases run the installed entry point.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from chipdse.cli import invoke
from chipdse.core.design_space import enumerate_points
from chipdse.core.errors import SpecError
from chipdse.core.models import CARD_FIELDS, read_card
from chipdse.core.paths import instances_dir
from chipdse.core.scenario import load, load_scenario
from chipdse.core.specs import Workload, read_yaml
from chipdse.core.workloads import load_lengths, load_trace
from chipdse.evaluators.estimator import Screen
from chipdse.evaluators.latency import ChipletCaps, task_time_s

INF = math.inf

TRACE_HEADER = "num_prefill_tokens,num_decode_tokens\n"
CARD = (instances_dir() / "models" / "nemotron-h-4b.json").read_text()
"""The HYDRA cases' card, as text (for cases that change it in ways ``json.dumps`` cannot write)."""


@dataclass(frozen=True)
class Case:
    """One bad input: which files to change, how, the command, and what the error line must name.

    ``kind`` picks the base scenario (hydra, snake or nova). ``files`` maps a file role (scenario, library,
    package, workload, card, trace) to the change: a dict of dotted field paths to new values (YAML / JSON files),
    or the text of the file (trace, or a whole file). ``argv`` is the command after ``chipdse``; ``{scenario}``,
    ``{out}`` and ``{tmp}`` are filled in. ``needles`` must all appear in the error line; ``{role}`` names the
    file of that role (e.g. ``{library}``). ``raw`` then replaces a role's file by bytes, appends text to it
    (``"+text"``), or turns it into a FIFO, a directory, a link to /dev/zero or a 65 MB sparse file (``"<fifo>"``,
    ``"<dir>"``, ``"<devzero>"``, ``"<huge>"``).
    """

    id: str
    files: dict[str, Any] = field(default_factory=dict)
    needles: tuple[str, ...] = ()
    argv: tuple[str, ...] = ("explore", "{scenario}", "--out", "{out}")
    kind: str = "hydra"
    raw: dict[str, bytes | str] = field(default_factory=dict)


def _trace(*rows: str) -> str:
    return TRACE_HEADER + "".join(r + "\n" for r in rows)


ALIAS_BOMB = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
"""The "billion laughs" YAML: nine levels of nine aliases (9^9 = 387 million leaves when expanded)."""


CASES = [
    # --- the issue's list ---
    Case("d2d-inf", {"scenario": {"design_space.d2d_GBps": [INF]}}, ("{scenario}", "design_space.d2d_GBps[0]")),
    Case("hbm-capacity-inf", {"library": {"memory.capacity_GB": INF}}, ("{library}", "memory.capacity_GB")),
    Case("trace-0-byte", {"trace": ""}, ("{trace}", "num_prefill_tokens", "empty")),
    Case("card-hidden-size-string", {"card": {"hidden_size": "big"}}, ("{card}", "hidden_size", "'big'")),
    Case("seed-int32", {}, ("--seed", "2147483647"), ("explore", "{scenario}", "--out", "{out}", "--seed",
                                                      "2147483648")),
    Case("total-chiplets-1000", {"scenario": {"design_space.total_chiplets": 1000}},
         ("{scenario}", "design_space.total_chiplets", "256")),
    Case("time-limit-inf", {"scenario": {"time_limit_s": INF}}, ("{scenario}", "time_limit_s", "finite")),
    Case("interposer-area-inf", {"package": {"interposer_area_mm2": INF}}, ("{package}", "interposer_area_mm2")),
    Case("hbm-bandwidth-inf", {"library": {"memory.bandwidth_GBps": INF}}, ("{library}", "memory.bandwidth_GBps")),
    Case("matrix-density-inf", {"library": {"compute.0.matrix_TFLOPS_per_mm2": INF}},
         ("{library}", "compute[0].matrix_TFLOPS_per_mm2")),
    Case("max-batch-1e12", {"scenario": {"design_space.max_batch": [1e12]}},
         ("{scenario}", "design_space.max_batch[0]", "4096")),
    Case("time-limit-option-negative", {}, ("--time-limit",), ("explore", "{scenario}", "--out", "{out}",
                                                               "--time-limit", "-1")),
    Case("seed-option-negative", {}, ("--seed",), ("explore", "{scenario}", "--out", "{out}", "--seed", "-3")),
    Case("unknown-command", {}, ("No such command", "bogus"), ("bogus", "{scenario}")),
    Case("missing-argument", {}, ("compare", "PROBLEM"), ("compare",)),
    # --- causes, not symptoms ---
    Case("tiny-hbm", {"library": {"memory.capacity_GB": 0.25}}, ("{library}", "memory.capacity_GB", "weights")),
    Case("huge-hidden-size", {"card": {"hidden_size": 300_000, "computed_params_total": None}},
         ("{library}", "memory.capacity_GB", "{card}")),
    Case("trace-row-1e9-tokens", {"trace": _trace("100,20", "1000000000,5")},
         ("{trace}", "num_prefill_tokens", "line 3")),
    Case("request-beyond-any-hbm", {"card": {"hidden_size": 3072}, "trace": _trace("100,20", "9000000,5"),
                                    "library": {"memory.capacity_GB": 5.0}},
         ("{trace}", "num_prefill_tokens", "line 3", "9,000,005 tokens")),
    Case("no-split-holds-a-group", {"library": {"memory.capacity_GB": 5.0},
                                    "scenario": {"design_space.hbm_min": 2, "design_space.hbm_max": 2}},
         ("{library}", "memory.capacity_GB", "no split of at most 2 HBM stacks", "mamba")),
    Case("total-chiplets-over-cells", {"scenario": {"design_space.total_chiplets": 99}},
         ("{scenario}", "design_space.total_chiplets", "25 cells")),
    Case("hbm-max-over-ring", {"scenario": {"design_space.hbm_max": 100}},
         ("{scenario}", "design_space.hbm_max", "16 ring cells", "{package}")),
    # --- fields the study now uses ---
    Case("num-hidden-layers-mismatch", {"card": {"num_hidden_layers": 40}}, ("{card}", "num_hidden_layers", "52")),
    Case("die-larger-than-cell", {"package": {"cell_pitch_mm": 10.0}},
         ("{library}", "compute[0].die_area_mm2", "cell_pitch_mm")),
    Case("d2d-phy-fills-die", {"scenario": {"design_space.d2d_GBps": [512, 100_000]}},
         ("{scenario}", "design_space.d2d_GBps[1]", "PHY", "{library}")),
    Case("overhead-fills-die", {"library": {"compute.2.overhead_area_mm2": 121.0}},
         ("{library}", "compute[2].overhead_area_mm2")),
    Case("hop-latency-negative", {"package": {"hop_latency_ns": -1.0}}, ("{package}", "hop_latency_ns")),
    # --- scenario ---
    Case("seed-2-31", {"scenario": {"seed": 2**31}}, ("{scenario}", "seed", "2147483647")),
    Case("seed-negative", {"scenario": {"seed": -1}}, ("{scenario}", "seed")),
    Case("hbm-min-above-max", {"scenario": {"design_space.hbm_min": 9, "design_space.hbm_max": 4}},
         ("{scenario}", "design_space", "hbm_min")),
    Case("d2d-list-too-long", {"scenario": {"design_space.d2d_GBps": list(range(1, 101))}},
         ("{scenario}", "design_space.d2d_GBps", "64")),
    Case("design-space-too-large", {"scenario": {"design_space.total_chiplets": 25, "design_space.hbm_min": 1,
                                                 "design_space.min_per_type": 0,
                                                 "design_space.d2d_GBps": list(range(200, 840, 10)),
                                                 "design_space.max_batch": list(range(1, 65))}},
         ("{scenario}", "design_space", "2,000,000")),
    Case("simulation-duration-huge", {"scenario": {"simulation.duration_s": 1e9}},
         ("{scenario}", "simulation.duration_s", "3600")),
    Case("simulation-candidates-huge", {"scenario": {"simulation.candidates": 1000}},
         ("{scenario}", "simulation.candidates")),
    Case("estimator-chunk-zero", {"scenario": {"estimator.chunk_tokens": 0}}, ("{scenario}", "estimator.chunk_tokens")),
    Case("scenario-rate-too-many-requests", {"scenario": {"arrival_rate_rps": 5e5}},
         ("{scenario}", "arrival_rate_rps", "10,000,000")),
    Case("sweep-sim-duration-nan", {"scenario": {"sweep.sim_duration_s": math.nan}},
         ("{scenario}", "sweep.sim_duration_s")),
    # --- workload and trace ---
    Case("workload-rate-nan", {"workload": {"arrival_rate_rps": math.nan}}, ("{workload}", "arrival_rate_rps")),
    Case("workload-too-many-requests", {"workload": {"arrival_rate_rps": 1e5, "duration_s": 1e3}},
         ("{workload}", "duration_s", "arrival_rate_rps x duration_s")),
    Case("workload-median-inf", {"workload": {"trace": None, "lengths": {"prefill_median": INF, "prefill_sigma": 1,
                                                                        "decode_median": 10, "decode_sigma": 1}}},
         ("{workload}", "lengths.prefill_median")),
    Case("workload-sigma-huge", {"workload": {"trace": None, "lengths": {"prefill_median": 100,
                                                                        "prefill_sigma": 1000, "decode_median": 10,
                                                                        "decode_sigma": 1}}},
         ("{workload}", "lengths.prefill_sigma")),
    Case("trace-header-only", {"trace": TRACE_HEADER}, ("{trace}", "request row")),
    Case("trace-inf-tokens", {"trace": _trace("100,20", "300,inf")}, ("{trace}", "num_decode_tokens", "line 3")),
    Case("trace-arabic-indic-digits", {"trace": _trace("100,20", "\u0661\u0662,5")},
         ("{trace}", "num_prefill_tokens", "line 3")),
    Case("trace-arrivals-go-back", {"trace": "num_prefill_tokens,num_decode_tokens,arrived_at\n100,20,2.0\n"
                                             "100,20,1.0\n"},
         ("{trace}", "arrived_at", "non-decreasing", "line 3")),
    Case("trace-negative-arrival", {"trace": "num_prefill_tokens,num_decode_tokens,arrived_at\n100,20,-1\n"},
         ("{trace}", "arrived_at", "line 2")),
    # --- package and library ---
    Case("package-rows-40", {"package": {"rows": 40}}, ("{package}", "rows", "16")),
    Case("phy-lane-rate-inf", {"library": {"phy.lane_rate_Gbps": INF}}, ("{library}", "phy.lane_rate_Gbps")),
    Case("die-beyond-reticle", {"library": {"compute.1.die_area_mm2": 2000.0}},
         ("{library}", "compute[1].die_area_mm2", "reticle")),
    # --- model card ---
    Case("card-vocab-fraction", {"card": {"vocab_size": 1.5}}, ("{card}", "vocab_size")),
    Case("card-heads-negative", {"card": {"num_attention_heads": -4}}, ("{card}", "num_attention_heads")),
    Case("card-layer-mixer-string", {"card": {"layer_mixer": "attention"}}, ("{card}", "layer_mixer")),
    # a bad layer name is blamed on itself, not on the derived fields (layer_counts, ...) it no longer matches
    Case("card-layer-mixer-unknown", {"card": {"layer_mixer": ["mamba9"] + ["mamba2"] * 51}},
         ("{card}", "layer_mixer[0]", "mamba9", "attention")),
    Case("card-published-total-string", {"card": {"published_params_total": "many"}},
         ("{card}", "published_params_total")),
    # --- other options and commands ---
    Case("time-limit-option-inf", {}, ("--time-limit",), ("explore", "{scenario}", "--out", "{out}",
                                                          "--time-limit", "inf")),
    Case("simulate-rate-text", {}, ("--rate",), ("simulate", "{scenario}", "--rate", "abc")),
    Case("sweep-workers-zero", {}, ("--workers",), ("sweep", "{scenario}", "--workers", "0", "--store",
                                                     "{out}/results.sqlite")),
    Case("simulate-seed-int32", {}, ("--seed",), ("simulate", "{scenario}", "--seed", "4294967296")),
    Case("sweep-store-bad-scenario", {"scenario": {"design_space.d2d_GBps": [INF]}},
         ("{scenario}", "design_space.d2d_GBps[0]"), ("sweep", "{scenario}", "--store", "{out}/results.sqlite")),
    Case("sweep-store-nothing-buildable", {"package": {"interposer_area_mm2": 100.0}},
         ("{package}", "interposer_area_mm2"), ("sweep", "{scenario}", "--store", "{out}/results.sqlite")),
    Case("compare-csv-bad-scenario", {"library": {"memory.capacity_GB": INF}}, ("{library}", "memory.capacity_GB"),
         ("compare", "hbm-partition", "{scenario}", "--csv", "{out}/rows.csv")),
    # --- SNAKE ---
    Case("snake-batch-1e12", {"scenario": {"batches": [8, 1e12]}}, ("{scenario}", "batches[1]", "4096"),
         kind="snake"),
    Case("snake-link-inf", {"scenario": {"template.link_GBps": INF}}, ("{scenario}", "template.link_GBps"),
         kind="snake"),
    Case("snake-time-limit-inf", {"scenario": {"time_limit_s": INF}}, ("{scenario}", "time_limit_s"), kind="snake"),
    Case("snake-serving-seed-int32", {"scenario": {"serving.seed": 2**31}}, ("{scenario}", "serving.seed"),
         kind="snake"),
    Case("snake-card-hidden-size-string", {"card": {"hidden_size": "big"}}, ("{card}", "hidden_size"), kind="snake"),
    # --- NOVA ---
    Case("nova-length-1e9", {"scenario": {"lengths": [[1_000_000_000, 10]]}}, ("{scenario}", "lengths[0][0]"),
         kind="nova"),
    Case("nova-sync-inf", {"scenario": {"system.sync_us": INF}}, ("{scenario}", "system.sync_us"), kind="nova"),
    Case("nova-gpus-huge", {"scenario": {"gpus": {"falcon-h1-7b": 1000}}}, ("{scenario}", "gpus.falcon-h1-7b"),
         kind="nova"),
    Case("nova-experts-seed-negative", {"scenario": {"experts.seed": -1}}, ("{scenario}", "experts.seed"),
         kind="nova"),
    Case("nova-batch-zero", {"scenario": {"batches": [0]}}, ("{scenario}", "batches[0]"), kind="nova"),
    # --- input files: the safe reader (findings 1, 12, 16) ---
    Case("card-not-utf8", needles=("{card}", "UTF-8", "0xe9"), raw={"card": b'{"name": "caf\xe9"}'}),
    Case("snake-card-not-utf8", needles=("{card}", "UTF-8"), raw={"card": bytes(range(256))}, kind="snake"),
    Case("scenario-not-utf8", needles=("{scenario}", "UTF-8", "line 1"), raw={"scenario": b"name: \xff\n"}),
    Case("scenario-fifo", needles=("{scenario}", "not a regular file"), raw={"scenario": "<fifo>"}),
    Case("scenario-dev-zero", {}, ("/dev/zero", "not a regular file"), ("explore", "/dev/zero", "--out", "{out}")),
    Case("library-dev-zero", {"scenario": {"library": "/dev/zero"}}, ("/dev/zero", "not a regular file")),
    Case("trace-links-to-dev-zero", needles=("{trace}", "not a regular file"), raw={"trace": "<devzero>"}),
    Case("trace-is-a-directory", needles=("{trace}", "is a directory"), raw={"trace": "<dir>"}),
    Case("trace-above-64-mb", needles=("{trace}", "64 MB"), raw={"trace": "<huge>"}),
    Case("card-is-a-directory", needles=("{card}", "is a directory"), raw={"card": "<dir>"}),
    Case("model-path-too-long", {"scenario": {"model": "m" * 1_000_000 + ".json"}},
         ("{scenario}", "model", "too long")),
    Case("qap-dev-zero", {}, ("/dev/zero", "not a regular file"), ("solve", "qap", "/dev/zero")),
    Case("yaml-alias-bomb", needles=("{scenario}", "aliases"), raw={"scenario": ALIAS_BOMB}),
    Case("yaml-duplicate-key", needles=("{scenario}", "name", "again on line"), raw={"scenario": "+name: again\n"}),
    # --- model cards (finding 7) ---
    Case("card-unknown-field", {"card": {"totally_new_field": 1}}, ("{card}", "totally_new_field")),
    Case("card-kv-heads-above-heads", {"card": {"num_key_value_heads": 64}}, ("{card}", "num_key_value_heads", "32")),
    Case("card-heads-not-dividing-hidden", {"card": {"num_attention_heads": 7, "num_key_value_heads": 7,
                                                     "head_dim": None}},
         ("{card}", "num_attention_heads", "3072")),
    Case("card-mamba-heads", {"card": {"mamba_num_heads": 3}}, ("{card}", "mamba_num_heads", "112")),
    Case("card-attention-indices", {"card": {"attention_layer_indices": [0, 1]}},
         ("{card}", "attention_layer_indices")),
    Case("card-layer-counts", {"card": {"layer_counts": {"mixer:attention": 5}}}, ("{card}", "layer_counts")),
    Case("card-params-recount", {"card": {"computed_params_total": 1e9}}, ("{card}", "computed_params_total")),
    Case("card-dtype", {"card": {"torch_dtype": "float7"}}, ("{card}", "torch_dtype", "float7")),
    Case("card-top-k-above-experts", {"card": {"num_experts": 8, "num_experts_per_tok": 20}},
         ("{card}", "num_experts_per_tok", "8")),
    Case("card-duplicate-json-key", needles=("{card}", "hidden_size", "twice"),
         raw={"card": '{"hidden_size": 1, "hidden_size": 2}'}),
    Case("nova-card-top-k-above-experts", {"card": {"num_experts_per_tok": 200}},
         ("{card}", "num_experts_per_tok", "128"), kind="nova"),
    # --- repeated list entries (finding 8) ---
    Case("d2d-repeated", {"scenario": {"design_space.d2d_GBps": [256, 256, 256]}},
         ("{scenario}", "design_space.d2d_GBps[1]", "repeats [0]")),
    Case("max-batch-repeated", {"scenario": {"design_space.max_batch": [4, 8, 4]}},
         ("{scenario}", "design_space.max_batch[2]", "repeats [0]")),
    Case("library-names-repeated", {"library": {"compute.0.name": "Ap", "compute.1.name": "Ap"}},
         ("{library}", "compute[1].name", "repeats [0]")),
    Case("datasets-repeated", {"scenario": {"simulation.datasets": ["arxiv.yaml", "arxiv.yaml"]}},
         ("{scenario}", "simulation.datasets[1]")),
    Case("sweep-workloads-repeated", {"scenario": {"sweep.workloads": ["bwb.yaml", "arxiv.yaml", "bwb.yaml"]}},
         ("{scenario}", "sweep.workloads[2]", "repeats [0]")),
    Case("snake-models-repeated", {"scenario": {"models": ["opt-66b", "opt-66b"]}}, ("{scenario}", "models[1]"),
         kind="snake"),
    Case("snake-batches-repeated", {"scenario": {"batches": [8, 8]}}, ("{scenario}", "batches[1]"), kind="snake"),
    Case("snake-mode-model-not-in-models", {"scenario": {"mode_models": ["llama-3-8b"]}},
         ("{scenario}", "mode_models[0]", "llama-3-8b"), kind="snake"),
    # a misspelt model is blamed on itself, not on the mode model it no longer matches
    Case("snake-unknown-model", {"scenario": {"models": ["opt-66b", "llama-3-70bx", "qwen3-30b-a3b"]}},
         ("{scenario}", "models[1]", "llama-3-70bx", "one of"), kind="snake"),
    Case("nova-models-repeated", {"scenario": {"models": ["falcon-h1-7b", "falcon-h1-7b"], "gpus": {}}},
         ("{scenario}", "models[1]"), kind="nova"),
    Case("nova-batches-repeated", {"scenario": {"batches": [32, 32]}}, ("{scenario}", "batches[1]"), kind="nova"),
    Case("nova-lengths-repeated", {"scenario": {"lengths": [[100, 10], [100, 10]]}}, ("{scenario}", "lengths[1]"),
         kind="nova"),
    Case("snake-serving-l-out-beyond-context", {"scenario": {"serving.l_out": 100_000}},
         ("{scenario}", "serving.l_out", "llama-3-70b", "8,192"), kind="snake"),
    Case("snake-serving-l-in-1e6", {"scenario": {"serving.l_in": 1_000_000}}, ("{scenario}", "serving.l_in", "8,192"),
         kind="snake"),
    Case("snake-serving-decode-tokens", {"scenario": {"serving.l_out": 8000, "serving.requests": 100_000}},
         ("{scenario}", "serving.l_out", "20,000,000"), kind="snake"),
    Case("nova-expert-table-huge", {"scenario": {"experts": {"batch": 4096, "experts": [2048], "top_k": 1024}}},
         ("{scenario}", "experts.batch", "1,024 routed tokens"), kind="nova"),
    Case("nova-lengths-beyond-context", {"scenario": {"lengths": [[2048, 512], [40_000, 1000]]}},
         ("{scenario}", "lengths[1]", "qwen3-30b-a3b", "40,960"), kind="nova"),
    Case("snake-mode-models-empty", {"scenario": {"mode_models": []}}, ("{scenario}", "mode_models"), kind="snake"),
    Case("snake-serving-models-empty", {"scenario": {"serving.models": []}}, ("{scenario}", "serving.models"),
         kind="snake"),
    Case("nova-routing-empty", {"scenario": {"experts.routing": []}}, ("{scenario}", "experts.routing"),
         kind="nova"),
    Case("snake-shape-rows-repeated", {"scenario": {"shape_set.rows": [32, 32]}},
         ("{scenario}", "shape_set.rows[1]", "repeats [0]"), kind="snake"),
    Case("snake-budgets-repeated", {"scenario": {"shape_set.budgets_mm2": [0.1, 0.1]}},
         ("{scenario}", "shape_set.budgets_mm2[1]"), kind="snake"),
    Case("snake-area-cols-repeated", {"scenario": {"area_split.cols": [128, 128]}},
         ("{scenario}", "area_split.cols[1]"), kind="snake"),
    Case("snake-rate-fractions-repeated", {"scenario": {"serving.rate_fractions": [0.2, 0.2]}},
         ("{scenario}", "serving.rate_fractions[1]"), kind="snake"),
    # --- issue 35 item 6: inputs that ran to the end with no word ---
    Case("snake-rate-past-capacity", {"scenario": {"serving.rate_fractions": [0.5, 1.5]}},
         ("{scenario}", "serving.rate_fractions[1]", "less than 1", "without bound"), kind="snake"),
    Case("snake-budget-no-shape-fits", {"scenario": {"shape_set.budgets_mm2": [0.05, 1e-6]}},
         ("{scenario}", "shape_set.budgets_mm2", "[1] = 1e-06 mm^2", "no shape fits"), kind="snake"),
    Case("nova-batch-past-kv-capacity", {"scenario": {"batches": [32, 4096], "lengths": [[8192, 2048]]}},
         ("{scenario}", "batches[1]", "4,096 requests", "below the shortest requested"), kind="nova"),
    Case("nova-expert-counts-repeated", {"scenario": {"experts.experts": [16, 16]}},
         ("{scenario}", "experts.experts[1]"), kind="nova"),
    Case("nova-routing-repeated", {"scenario": {"experts.routing": ["zipf", "zipf"]}},
         ("{scenario}", "experts.routing[1]"), kind="nova"),
    # --- contradictions and values that are not what they seem (findings 9, 11, 14, 15) ---
    Case("gamma-cv-with-poisson", {"workload": {"gamma_cv": 5}}, ("{workload}", "gamma_cv", "arrival: gamma")),
    Case("sim-duration-above-cap", {"scenario": {"simulation.duration_s": 100, "simulation.max_duration_s": 10}},
         ("{scenario}", "simulation.duration_s", "max_duration_s")),
    Case("nova-top-k-above-experts", {"scenario": {"experts.top_k": 64, "experts.experts": [16]}},
         ("{scenario}", "experts.top_k", "16"), kind="nova"),
    Case("replay-without-timestamps", {"workload": {"arrival": "replay"}}, ("{workload}", "arrival", "arrived_at")),
    Case("total-chiplets-true", {"scenario": {"design_space.total_chiplets": True}},
         ("{scenario}", "design_space.total_chiplets", "true")),
    Case("trace-row-more-fields", {"trace": "num_prefill_tokens,num_decode_tokens,a,b\n1,2,3,4,5,6\n"},
         ("{trace}", "line 2", "got 6")),
    Case("trace-value-200k-digits", {"trace": _trace("100,20", "3," + "9" * 100_000)},
         ("{trace}", "num_decode_tokens", "line 3", "characters")),
    Case("name-climbs-out", {"scenario": {"name": "../../etc/evil"}}, ("{scenario}", "name", "folder")),
    Case("name-absolute", {"scenario": {"name": "/tmp/evil"}}, ("{scenario}", "name", "folder")),
    Case("name-empty", {"scenario": {"name": ""}}, ("{scenario}", "name")),
    Case("name-5000-chars", {"scenario": {"name": "n" * 5000}}, ("{scenario}", "name", "100")),
    Case("seed-5000-digits", {"scenario": {"seed": None}}, ("{scenario}", "seed", "4300 digits"),
         raw={"scenario": "+seed: " + "9" * 5000 + "\n"}),
    Case("card-hidden-size-5000-digits", needles=("{card}", "hidden_size", "4300 digits"),
         raw={"card": CARD.replace('"hidden_size": 3072', '"hidden_size": ' + "9" * 5000).encode()}),
    Case("card-norm-eps-1e400", needles=("{card}", "norm_eps", "finite"),
         raw={"card": CARD.replace('"norm_eps": 1e-05', '"norm_eps": 1e400').encode()}),
]

BASE = {"hydra": "default.yaml", "snake": "snake-stratum.yaml", "nova": "nova-nemotron3-nano.yaml"}


def _set(data: Any, dotted: str, value: Any) -> None:
    """Set ``data[a][b][0]...`` for ``"a.b.0"`` (``None`` removes the key)."""
    *head, last = dotted.split(".")
    for part in head:
        data = data[int(part)] if isinstance(data, list) else data.setdefault(part, {})
    if isinstance(data, list):
        data[int(last)] = value
    elif value is None:
        data.pop(last, None)
    else:
        data[last] = value


def _changed(text: str, changes: dict[str, Any], as_json: bool) -> str:
    data = json.loads(text) if as_json else yaml.safe_load(text)
    for dotted, value in changes.items():
        _set(data, dotted, value)
    return json.dumps(data) if as_json else yaml.safe_dump(data)


def _build(case: Case, tmp: Path) -> tuple[list[str], dict[str, Path]]:
    """Write the case's files under ``tmp``; return the argv and the file of each role."""
    inst = instances_dir()
    files = {"scenario": tmp / "scenario.yaml"}
    scenario = yaml.safe_load((inst / "scenarios" / BASE[case.kind]).read_text())
    if case.kind == "hydra":
        files |= {"library": tmp / "library.yaml", "package": tmp / "package.yaml", "workload": tmp / "workload.yaml",
                  "card": tmp / "card.json", "trace": tmp / "trace.csv"}
        sources = {"library": inst / "chiplets" / "hydra.yaml", "package": inst / "packages" / "hydra-5x5.yaml",
                   "workload": inst / "workloads" / "arxiv.yaml", "card": inst / "models" / "nemotron-h-4b.json"}
        for role, src in sources.items():
            files[role].write_text(_changed(src.read_text(), case.files.get(role, {}), role == "card"))
        scenario |= {"library": str(files["library"]), "package": str(files["package"]),
                     "workload": str(files["workload"]), "model": str(files["card"]), "simulation": {"enabled": False}}
        if "trace" in case.files or "trace" in case.raw:
            files["trace"].write_text(case.files.get("trace", _trace("100,20")))
            wl = yaml.safe_load(files["workload"].read_text()) | {"trace": str(files["trace"])}
            files["workload"].write_text(yaml.safe_dump(wl))
    elif "card" in case.files or "card" in case.raw:
        files["card"] = tmp / "card.json"
        card = (inst / "models" / f"{scenario['models'][0]}.json").read_text()
        files["card"].write_text(_changed(card, case.files.get("card", {}), True))
        scenario["models"][0] = str(files["card"])
    files["scenario"].write_text(_changed(yaml.safe_dump(scenario), case.files.get("scenario", {}), False))
    for role, raw in case.raw.items():
        _replace(files[role], raw)
    fill = {"scenario": str(files["scenario"]), "out": str(tmp / "out"), "tmp": str(tmp)}
    return [a.format(**fill) for a in case.argv], files


def _replace(path: Path, raw: bytes | str) -> None:
    """Apply a :class:`Case` ``raw`` change to ``path``."""
    if isinstance(raw, bytes):
        path.write_bytes(raw)
    elif raw.startswith("+"):
        path.write_text(path.read_text() + raw[1:])
    elif raw in ("<fifo>", "<dir>", "<devzero>"):
        path.unlink()
        {"<fifo>": os.mkfifo, "<dir>": Path.mkdir, "<devzero>": lambda p: p.symlink_to("/dev/zero")}[raw](path)
    elif raw == "<huge>":
        with path.open("ab") as f:
            f.truncate(65 * 2**20)  # sparse: no disk used
    else:
        path.write_text(raw)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = invoke(argv)
    return code, capsys.readouterr().err


def _check_error(code: int, stderr: str, needles: list[str]) -> str:
    lines = stderr.rstrip("\n").split("\n")
    assert code == 2, stderr
    assert len(lines) == 1, stderr  # no blank line either (a progress bar on a pipe used to leave one)
    line = lines[0]
    assert line.startswith("error: ") and "Traceback" not in line, line
    assert len(line) < 2000, f"{len(line):,} characters"  # an offending value is quoted cut short
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def test_at_least_45_kinds() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 45
    assert {c.kind for c in CASES} == {"hydra", "snake", "nova"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               no_heavy_work: list[str]) -> None:
    argv, files = _build(case, tmp_path)
    code, stderr = _run(argv, capsys)
    needles = [n.format(**{k: str(v) for k, v in files.items()}) for n in case.needles]
    _check_error(code, stderr, needles)
    assert no_heavy_work == [], "the error came after heavy work"
    assert not (tmp_path / "out").exists(), "an output folder was left behind"


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.id in ("seed-int32", "trace-0-byte", "unknown-command")],
                         ids=lambda c: c.id)
def test_installed_entry_point(case: Case, tmp_path: Path) -> None:
    """The console script (``chipdse.cli:run``) gives the same one line and exit code as the in-process runs."""
    exe = Path(sys.executable).parent / "chipdse"
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    argv, files = _build(case, tmp_path)
    proc = subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(exe.parent), "COLUMNS": "40"})
    needles = [n.format(**{k: str(v) for k, v in files.items()}) for n in case.needles]
    _check_error(proc.returncode, proc.stderr, needles)
    assert not (tmp_path / "out").exists()


def test_help_still_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert invoke(["explore", "--help"]) == 0
    assert "--seed" in capsys.readouterr().out


# --- the checks' truths, from outside the code under test ---


def test_design_space_size_is_the_enumeration(write_scenario) -> None:
    """``DesignSpace.n_points`` (the bound's closed form) equals the points the enumeration builds, on a space
    where every composition fits the package."""
    sc = load_scenario(write_scenario({"design_space": {"total_chiplets": 14, "hbm_min": 2, "hbm_max": 6,
                                                        "min_per_type": 1, "d2d_GBps": [256, 512],
                                                        "max_batch": [4, 8, 16]}}))
    pts, unbuildable = enumerate_points(sc)
    assert unbuildable == []
    assert sc.spec.design_space.n_points(len(sc.compute_types())) == len(pts)


def test_hop_latency_adds_once_per_hop_where_bytes_move() -> None:
    """Per-hop latency (the package's ``hop_latency_ns``): a task moving bytes over 3 hops takes 3 latencies more;
    one moving none, nothing more."""
    caps = ChipletCaps(*(np.array([v]) for v in (1e12, 1e11, 0.0, 0.0, 0.0)))
    base = task_time_s(1e9, 0.0, np.array([1e6, 0.0]), caps, 1e3, 3.0, 100.0)
    more = task_time_s(1e9, 0.0, np.array([1e6, 0.0]), caps, 1e3, 3.0, 100.0, hop_latency_s=2e-7)
    assert more - base == pytest.approx([6e-7, 0.0], abs=1e-15)


def test_hop_latency_changes_the_screen(write_scenario, tmp_path: Path) -> None:
    """A slower NoI hop lowers no point's TTFT and raises some: the what-if question is answered."""
    pkg = yaml.safe_load((instances_dir() / "packages" / "hydra-5x5.yaml").read_text())
    pkg["hop_latency_ns"] = 5000.0
    (tmp_path / "slow.yaml").write_text(yaml.safe_dump(pkg))
    small = {"total_chiplets": 12, "hbm_min": 3, "hbm_max": 4, "d2d_GBps": [512], "max_batch": [8]}
    fast = load_scenario(write_scenario({"design_space": small}))
    slow = load_scenario(write_scenario({"design_space": small, "package": str(tmp_path / "slow.yaml")}, "s.yaml"))
    a, b = Screen(fast).score(enumerate_points(fast)[0]), Screen(slow).score(enumerate_points(slow)[0])
    both = a["stable"] & b["stable"]
    assert both.any()
    slower, faster = b.loc[both, "ttft_s"], a.loc[both, "ttft_s"]
    assert (slower >= faster).all() and (slower > faster).any()



# --- input files: the readers' truths ---


def test_strict_yaml_reads_every_bundled_file_as_pyyaml_does() -> None:
    """The strict loader (no duplicate keys, no aliases) gives PyYAML's own result on every bundled YAML file."""
    paths = sorted(instances_dir().rglob("*.yaml"))
    assert len(paths) >= 10
    for p in paths:
        assert read_yaml(p) == yaml.safe_load(p.read_text()), p


def test_nested_duplicate_key_names_the_key_and_both_lines(tmp_path: Path) -> None:
    p = tmp_path / "s.yaml"
    p.write_text("name: x\ndesign_space:\n  hbm_min: 2\n  hbm_max: 8\n  hbm_min: 4\n")
    with pytest.raises(SpecError) as info:
        read_yaml(p)
    assert (info.value.source, info.value.field) == (str(p), "hbm_min")
    assert "line 3" in info.value.expected and "line 5" in info.value.expected


def test_card_fields_are_the_documented_schema() -> None:
    """Every field SOURCE.md's card schema names is accepted, and every bundled card uses only accepted fields."""
    text = (instances_dir() / "models" / "SOURCE.md").read_text()
    schema = text[text.index("## Card schema"):text.index("## Summary")]
    documented = {name for name in re.findall(r"`([a-z_]+)`", schema) if "_" in name or name in ("name", "source",
                                                                                                 "extra", "notes")}
    documented -= {"hybrid_override_pattern", "layers_block_type", "shared_mlp"}  # native encodings, a layer type
    assert documented - CARD_FIELDS == set()
    for card in (instances_dir() / "models").glob("*.json"):
        assert set(json.loads(card.read_text())) <= CARD_FIELDS, card


def test_study_card_paths_resolve_against_the_scenario_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """A SNAKE or NOVA ``models:`` path is relative to the scenario's folder (as HYDRA's ``model:``), whatever the
    working folder; the studies then read that file."""
    (tmp_path / "models").mkdir()
    (tmp_path / "sc").mkdir()
    (tmp_path / "elsewhere").mkdir()
    card = tmp_path / "models" / "mine.json"
    card.write_text((instances_dir() / "models" / "llama-3-70b.json").read_text())
    snake = yaml.safe_load((instances_dir() / "scenarios" / BASE["snake"]).read_text())
    snake |= {"models": ["../models/mine.json", "opt-66b"], "mode_models": ["../models/mine.json"]}
    nova = yaml.safe_load((instances_dir() / "scenarios" / BASE["nova"]).read_text())
    nova |= {"models": ["../models/mine.json"], "gpus": {"../models/mine.json": 2}}
    (tmp_path / "sc" / "snake.yaml").write_text(yaml.safe_dump(snake))
    (tmp_path / "sc" / "nova.yaml").write_text(yaml.safe_dump(nova))
    monkeypatch.chdir(tmp_path / "elsewhere")
    s, n = load(Path("../sc/snake.yaml")), load(Path("../sc/nova.yaml"))
    assert s.spec.models == [str(card), "opt-66b"] and s.spec.mode_models == [str(card)]
    assert n.spec.models == [str(card)] and n.spec.gpus == {str(card): 2}
    assert read_card(s.spec.models[0])[1] == card


def test_unreadable_input_is_named_not_called_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A model card the user may not read (chmod 000; simulated, since the tests may run as root) is one line
    naming the card, never "cannot write output"."""
    argv, files = _build(Case("unreadable"), tmp_path)
    real_open = Path.open

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == files["card"]:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    code, stderr = _run(argv, capsys)
    line = _check_error(code, stderr, [str(files["card"]), "permission denied"])
    assert "output" not in line
    assert not (tmp_path / "out").exists()


def test_qap_error_names_the_file_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A QAPLIB file with a negative flow: the error names its path (as given), not the instance's stem."""
    bad = tmp_path / "q_neg.dat"
    bad.write_text("3\n0 1 2\n1 0 1\n2 1 0\n0 -1 2\n1 0 1\n2 1 0\n")
    code, stderr = _run(["solve", "qap", str(bad)], capsys)
    assert _check_error(code, stderr, []).startswith(f"error: {bad}: ")


@pytest.mark.parametrize("token", ["--5", "\u00b2", "1_0", "9" * 5000, "\u0665"])
def test_qap_tokens_are_ascii_integers(tmp_path: Path, capsys: pytest.CaptureFixture[str], token: str) -> None:
    """A QAPLIB token that ``int`` would misread (``1_0`` as 10), refuse with a traceback (``--5``, a superscript)
    or convert only past Python's digit limit: one line naming the path, the line and the value's position."""
    bad = tmp_path / "q.dat"
    bad.write_text(f"2\n0 1\n1 {token}\n0 1\n1 0\n")
    code, stderr = _run(["solve", "qap", str(bad)], capsys)
    line = _check_error(code, stderr, [str(bad), "line 3, value 5"])
    assert len(line) < 400


def test_trace_errors_count_lines_as_an_editor_does(tmp_path: Path) -> None:
    """Blank lines count: the reported line is where the bad value is in the file."""
    text = TRACE_HEADER + "100,20\n\n\n300,20\n\n7,oops\n"
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(SpecError, match=f"line {text.splitlines().index('7,oops') + 1}\\)"):
        load_trace(p)


def test_replay_keeps_the_trace_timestamps(tmp_path: Path) -> None:
    """``arrival: replay`` on a trace with ``arrived_at`` loads, with exactly the timestamps of the file."""
    (tmp_path / "t.csv").write_text("num_prefill_tokens,num_decode_tokens,arrived_at\n10,2,0.5\n20,3,1.25\n")
    wl = Workload(name="w", trace="t.csv", arrival="replay", arrival_rate_rps=1.0)
    sample = load_lengths(wl, tmp_path, 0, tmp_path / "w.yaml")
    assert sample.arrival_s is not None and sample.arrival_s.tolist() == [0.5, 1.25]
    assert sample.prefill_tokens.tolist() == [10, 20] and sample.decode_tokens.tolist() == [2, 3]


def test_snake_contexts_past_a_cards_maximum_warn_in_one_line_before_the_run(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    """SNAKE's bundled scenario times OPT-66B (2,048 positions, its published config) at 4K-16K contexts as the
    paper's Fig. 13 does: explore says so once, naming the field and the card, before it runs anything."""
    from typer.testing import CliRunner

    import chipdse.api
    from chipdse.cli import app
    from chipdse.core.errors import ChipdseError

    def stop(*_args: object, **_kwargs: object) -> None:
        raise ChipdseError("stopped before the run")

    monkeypatch.setattr(chipdse.api, "explore", stop)
    res = CliRunner().invoke(app, ["explore", str(instances_dir() / "scenarios" / "snake-stratum.yaml"), "--out",
                                   str(tmp_path / "out")])
    warned = [ln for ln in res.output.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 1 and "contexts: 4,096, 8,192, 16,384 tokens" in warned[0]
    assert "opt-66b (2,048, models[" in warned[0] and "stopped before the run" in res.output
    assert res.output.index("warning:") < res.output.index("stopped before the run")
