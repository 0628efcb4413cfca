"""Machine description and the printed tables."""

import os
import platform
from typing import Dict, List, Optional


def machine_info(threads: int) -> Dict:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = None
    return {
        "cpu_model": model or platform.processor(),
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "threads": threads,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_start": os.getloadavg(),
    }


def _f(v: Optional[float], digits: int = 0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


_HEADER = (f"{'rate':>6} {'done':>7} | {'TTFT p50':>8} {'p90':>7} {'p99':>7} | "
           f"{'TPOT p50':>8} {'p90':>6} {'p99':>6} | {'req/s':>6} {'tok/s':>6} | "
           f"{'goodput':>7} {'attain':>6}")


def rate_table(label: str, per_rate: List[Dict]) -> str:
    """One block per target/setting: a row per offered rate (ms, req/s, %)."""
    lines = [f"== {label}", _HEADER, "-" * len(_HEADER)]
    for row in per_rate:
        s = row["summary"]
        t, p = s["ttft_ms"], s["tpot_ms"]
        lines.append(
            f"{row['rate']:>6g} {s['completed']:>3}/{s['requests']:<3} | "
            f"{_f(t['p50']):>8} {_f(t['p90']):>7} {_f(t['p99']):>7} | "
            f"{_f(p['p50'], 1):>8} {_f(p['p90'], 1):>6} {_f(p['p99'], 1):>6} | "
            f"{s['request_throughput']:>6.2f} {s['output_token_throughput']:>6.1f} | "
            f"{s['goodput']:>7.2f} {_f(s['slo_attainment_pct']):>5}%")
    return "\n".join(lines)


def cached_line(label: str, cached: Dict) -> str:
    if not cached or cached.get("ratio") is None:
        return f"{label}: cached-prefix TTFT not measured ({(cached or {}).get('error', 'no data')})"
    return (f"{label}: cached-prefix TTFT median {cached['cached_ms']:.0f} ms vs uncached "
            f"{cached['uncached_ms']:.0f} ms ({cached['prompt_tokens']} system tokens) -> "
            f"ratio {100 * cached['ratio']:.0f}% (goal <= 20%)")


def goodput_ratio_lines(runs: List[Dict], rates: List[float]) -> List[str]:
    """omnibus goodput / the best llama-server setting's goodput, per rate."""
    omni = [r for r in runs if r["target"] == "omnibus" and not r.get("error")]
    peers = [r for r in runs if r["target"] == "llama" and not r.get("error")]
    if not omni or not peers:
        return []
    lines = ["goodput ratio omnibus / llama-server best setting (goal >= 2x):"]
    for i, rate in enumerate(rates):
        o = omni[0]["rates"][i]["summary"]["goodput"]
        best = max(peers, key=lambda r: r["rates"][i]["summary"]["goodput"])
        b = best["rates"][i]["summary"]["goodput"]
        ratio = "inf" if b == 0 and o > 0 else ("n/a (both 0)" if b == 0 else f"{o / b:.2f}x")
        lines.append(f"  rate {rate:g}/s: omnibus {o:.2f} req/s, llama best {b:.2f} req/s "
                     f"({best['label']}) -> {ratio}")
    return lines
