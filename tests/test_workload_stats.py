"""Parametric workloads reproduce the datasets' published length statistics (HYDRA Sec. VI-A "Input datasets").

Reference numbers are typed here from the sources (not read from the workload files): LMSYS-Chat-1M (Zheng et al.,
ICLR 2024, Table 1; Zhao et al., WildChat, ICLR 2024, Table 1), BWB (Jiang et al., BlonDe, NAACL 2022, Table 1 and
Sec. 2), LongWriter-6k (Bai et al., ICLR 2025, abstract; dataset card) and the OpenAI Help Center's "100 tokens ~= 75
words". Each sample is the one the product draws: 20,000 requests at seed 0 (``load_lengths``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from chipdse.core.errors import SpecError
from chipdse.core.paths import instances_dir
from chipdse.core.specs import Workload, load_spec
from chipdse.core.workloads import LengthSample, fit_lognormal, load_lengths, sample_parametric

TOKENS_PER_WORD = 100 / 75  # OpenAI Help Center, "What are tokens and how to count them?"


def _bundled(name: str) -> LengthSample:
    path = instances_dir() / "workloads" / f"{name}.yaml"
    return load_lengths(load_spec(Workload, path), path.parent, seed=0, path=path)


@pytest.mark.parametrize(("mu", "sigma"), [(4.0, 0.7), (8.5, 0.39), (3.4, 1.29), (0.2, 2.5)])
def test_every_fit_recovers_the_lognormal_its_statistics_came_from(mu: float, sigma: float) -> None:
    """Statistics computed by scipy's lognormal (outside the code) give back its mu and sigma."""
    dist = stats.lognorm(s=sigma, scale=math.exp(mu))
    n = 6000
    given = [
        {"median": dist.median(), "sigma": sigma},
        {"mean": dist.mean(), "sigma": sigma},
        {"mean": dist.mean(), "median": dist.median()},
        {"mean": dist.mean(), "sd": dist.std()},
        {"min": dist.ppf(1 / (n + 1)), "max": dist.ppf(n / (n + 1)), "n": n},
    ]
    for g in given:
        got_mu, got_sigma = fit_lognormal(g)
        assert got_mu == pytest.approx(mu, abs=1e-9) and got_sigma == pytest.approx(sigma, rel=1e-9), g


@pytest.mark.parametrize("bad", [{"mean": 10, "median": 10}, {"mean": 5, "median": 10},
                                 {"min": 10, "max": 10, "n": 100}, {"min": 1, "max": 10, "n": 1},
                                 {"mean": 10}, {"median": 10, "sd": 3}])
def test_impossible_or_incomplete_statistics_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        fit_lognormal(bad)


def test_lmsys_chat_reproduces_its_published_means_and_prompt_spread() -> None:
    s = _bundled("chat")
    pre, dec = s.prefill_tokens.astype(float), s.decode_tokens.astype(float)
    # Zheng et al. Table 1: 69.5 tokens per prompt, 214.5 per response (sampled means within 3%)
    assert pre.mean() == pytest.approx(69.5, rel=0.03)
    assert dec.mean() == pytest.approx(214.5, rel=0.03)
    # WildChat Table 1, LMSYS-Chat-1M user turns: std 143.49 (a heavy-tailed sample's std: within 15%)
    assert pre.std() == pytest.approx(143.49, rel=0.15)
    # short prefill / short decode (HYDRA Sec. VI-A): far below the arXiv trace's prompts (2,588 tokens mean)
    assert pre.mean() < 0.1 * 2588


def test_bwb_reproduces_the_corpus_chapter_length_and_the_test_split_skew() -> None:
    s = _bundled("bwb")
    words_per_chapter = 325.4e6 / 196_304  # BlonDe Table 1, training split: words / documents (chapters)
    for arr in (s.decode_tokens, s.prefill_tokens):
        a = arr.astype(float)
        assert a.mean() == pytest.approx(words_per_chapter * TOKENS_PER_WORD, rel=0.03)
        # test split: 2,632 sentences / 80 chapters = 32.9 mean vs 30 median (Sec. 2): the same mean/median skew
        assert a.mean() / np.median(a) == pytest.approx((2632 / 80) / 30, rel=0.02)


def test_longwriter_reproduces_the_published_output_range() -> None:
    s = _bundled("longwriter")
    words = s.decode_tokens.astype(float) / TOKENS_PER_WORD
    # "6,000 SFT data with output lengths ranging from 2k to 32k words": nearly every output lies in the range (the
    # fit puts 1/6001 of the mass beyond each end) ...
    assert np.mean((words >= 2000) & (words <= 32000)) >= 0.999
    # ... and 6,000 draws span about that range (extremes of a sample: within a factor 1.5)
    first = words[:6000]
    assert 2000 / 1.5 <= first.min() <= 2000 * 1.5 and 32000 / 1.5 <= first.max() <= 32000 * 1.5
    # the sampled mean is the closed-form mean of the lognormal through those two quantiles (within 3%)
    sigma = math.log(32000 / 2000) / (2 * stats.norm.ppf(6000 / 6001))
    assert words.mean() == pytest.approx(math.sqrt(2000 * 32000) * math.exp(sigma**2 / 2), rel=0.03)
    # short prefill / long decode (HYDRA Sec. VI-A)
    assert s.prefill_tokens.mean() < 0.02 * s.decode_tokens.mean()


def test_statistics_in_words_scale_every_length_but_not_the_spread() -> None:
    base = {"prefill_median": 100, "prefill_sigma": 0.5, "decode_mean": 300, "decode_sd": 150}
    tokens = sample_parametric(base, 5000, seed=3, source="t")
    words = sample_parametric({**base, "decode_tokens_per_unit": 2.0}, 5000, seed=3, source="t")
    assert np.array_equal(tokens.prefill_tokens, words.prefill_tokens)
    ratio = words.decode_tokens / tokens.decode_tokens
    assert np.allclose(ratio[tokens.decode_tokens > 100], 2.0, rtol=0.01)  # rounding to whole tokens aside


@pytest.mark.parametrize(("lengths", "field"), [
    ({"prefill_mean": 10, "prefill_median": 20, "decode_median": 5, "decode_sigma": 1}, "lengths.prefill_mean"),
    ({"prefill_median": 10, "prefill_sigma": 1, "decode_mean": 5}, "lengths.decode_mean"),
    ({"prefill_median": 10, "prefill_sigma": 1}, "lengths.decode_median"),
    ({"prefill_median": 10, "prefill_sigma": 1, "decode_min": 50, "decode_max": 40, "decode_n": 10},
     "lengths.decode_max"),
    ({"prefill_median": 10, "prefill_sigma": 1, "decode_median": 5, "decode_sigma": 1,
      "decode_tokens_per_unit": 0}, "lengths.decode_tokens_per_unit"),
    ({"prefill_median": 10, "prefill_sigma": 1, "decode_median": 5, "decode_sigma": 1, "decode_p99": 7},
     "lengths.decode_p99"),
    ({"prefill_mean": 1e-30, "prefill_sd": 1e6, "decode_median": 5, "decode_sigma": 1}, "lengths.prefill_mean"),
])
def test_bad_statistics_name_their_key(lengths: dict, field: str) -> None:
    with pytest.raises(SpecError) as err:
        sample_parametric(lengths, 10, 0, "w.yaml")
    assert err.value.field == field and err.value.source == "w.yaml"
