"""Prediction-powered inference (PPI) for a rate: few human labels correct many machine ones.

A model judge grades far more (question, document) pairs than people do, but its grades are
biased: a hit rate over machine-filled labels has a narrow interval around the wrong value. PPI
(Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, *Prediction-powered inference*, Science
382; its power-tuned form PPI++, Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453; ARES,
Saad-Falcon et al. 2024, applies it to RAG judges) measures the judge's bias on a calibration
sample, the ``n`` items people labelled (``y``, and the machine's ``yhat`` on the same items),
and corrects the machine's mean over the ``N`` other items (``yhat_unlabeled``)::

    θ̂(λ)  = mean(λ·yhat_unlabeled) + mean(y - λ·yhat)
    se(λ) = sqrt(var(λ·yhat_unlabeled)/N + var(y - λ·yhat)/n)          (variances with ddof 0)
    λ̂     = clip(cov(y, yhat) / ((1 + n/N)·var(yhat ∪ yhat_unlabeled)), 0, 1)
    CI    = θ̂(λ̂) ± z_{1-α/2}·se(λ̂), clipped to [0, 1] for a rate

``λ = 1`` is classical PPI, ``λ = 0`` the human labels alone; ``λ̂`` (PPI++'s power tuning) is
what ``ppi_py.ppi_mean_ci`` does by default, and this module reproduces it (its ``cov`` is the
population covariance, its pooled variance ``np.cov``'s ddof-1 one, as there). The interval is
valid when the calibration items are a random sample of all items; it is never wider than the
human-only one by more than the tuning's noise, and narrows as the judge agrees with people.

Every function works on the last axis, so many simulated draws are one call (the coverage test
draws 500 at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A prediction-powered mean: its point, interval and the λ used (arrays when batched)."""

    estimate: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    lam: NDArray[np.float64]


def z_value(alpha: float) -> float:
    """The two-sided normal quantile ``z_{1-α/2}``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    return NormalDist().inv_cdf(1 - alpha / 2)


def tuned_lambda(y: ArrayLike, yhat: ArrayLike, yhat_unlabeled: ArrayLike) -> NDArray[np.float64]:
    """PPI++'s power-tuning λ̂ for a mean, in [0, 1] (0 when the machine's grades never vary:
    they carry nothing to borrow)."""
    y_, yhat_, unl = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_unlabeled))
    n, big_n = y_.shape[-1], unl.shape[-1]
    cov = ((y_ - y_.mean(-1, keepdims=True)) * (yhat_ - yhat_.mean(-1, keepdims=True))).mean(-1)
    pooled = np.concatenate([yhat_, unl], axis=-1)
    var = pooled.var(-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var > 0, cov / ((1 + n / big_n) * var), 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi_mean(
    y: ArrayLike,
    yhat: ArrayLike,
    yhat_unlabeled: ArrayLike,
    *,
    alpha: float = 0.05,
    lam: float | None = None,
    clip: tuple[float, float] | None = (0.0, 1.0),
) -> PPIEstimate:
    """The prediction-powered mean of ``y`` with its ``1 - alpha`` interval (see the module);
    ``lam=None`` tunes λ, ``lam=1`` is classical PPI. Needs ``n >= 2`` and ``N >= 1``."""
    y_, yhat_, unl = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_unlabeled))
    if y_.shape != yhat_.shape:
        raise ValueError("y and yhat must hold the same items")
    n, big_n = y_.shape[-1], unl.shape[-1]
    if n < 2 or big_n < 1:
        raise ValueError(
            f"need 2 labelled items or more and 1 unlabelled or more, got {n}, {big_n}"
        )
    lam_ = (
        tuned_lambda(y_, yhat_, unl)
        if lam is None
        else np.full(y_.shape[:-1], float(lam), dtype=np.float64)
    )
    scale = lam_[..., None]
    estimate = (scale * unl).mean(-1) + (y_ - scale * yhat_).mean(-1)
    se = np.sqrt((scale * unl).var(-1) / big_n + (y_ - scale * yhat_).var(-1) / n)
    half = z_value(alpha) * se
    low, high = estimate - half, estimate + half
    if clip is not None:
        low, high = np.clip(low, *clip), np.clip(high, *clip)
    return PPIEstimate(estimate, low, high, lam_)
