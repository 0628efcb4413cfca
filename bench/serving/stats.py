"""Per-rate summaries: percentiles, throughput, goodput against the SLOs."""

from typing import Dict, List, Optional, Sequence


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """q-th percentile (0..100), linear between closest ranks (numpy's default)."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _dist_ms(values: List[float]) -> Dict[str, Optional[float]]:
    ms = [v * 1000.0 for v in values]
    return {
        "mean": sum(ms) / len(ms) if ms else None,
        "p50": percentile(ms, 50), "p90": percentile(ms, 90), "p99": percentile(ms, 99),
    }


def meets_slo(res, slo_ttft_s: float, slo_tpot_s: float) -> bool:
    """A completed request within both objectives. A one-token answer has no
    TPOT and is judged on TTFT alone."""
    if not res.ok or res.ttft_s is None or res.ttft_s > slo_ttft_s:
        return False
    return res.tpot_s is None or res.tpot_s <= slo_tpot_s


def summarize(results, wall_s: float, slo_ttft_s: float, slo_tpot_s: float) -> Dict:
    """Everything the table shows for one rate, from the client's timings.

    Rates divide by wall_s, the run's start to its last response, so a server
    that falls behind is charged for the backlog it built.
    """
    done = [r for r in results if r.ok]
    good = [r for r in done if meets_slo(r, slo_ttft_s, slo_tpot_s)]
    out_tokens = sum(r.output_tokens for r in done)
    itl = [g for r in done for g in r.itl_s]
    wall = max(wall_s, 1e-9)
    errors = sorted({r.error for r in results if not r.ok})
    return {
        "requests": len(results),
        "completed": len(done),
        "failed": len(results) - len(done),
        "errors": errors[:5],
        "wall_s": wall_s,
        "ttft_ms": _dist_ms([r.ttft_s for r in done]),
        "tpot_ms": _dist_ms([r.tpot_s for r in done if r.tpot_s is not None]),
        "itl_ms": _dist_ms(itl),
        "e2e_ms": _dist_ms([r.e2e_s for r in done]),
        "output_tokens_mean": out_tokens / len(done) if done else None,
        "request_throughput": len(done) / wall,
        "output_token_throughput": out_tokens / wall,
        "goodput": len(good) / wall,
        "slo_attainment_pct": 100.0 * len(good) / len(results) if results else None,
        "usage_reported": all(r.output_tokens_from_usage for r in done) if done else None,
    }


def median(values: Sequence[float]) -> Optional[float]:
    return percentile(values, 50)
