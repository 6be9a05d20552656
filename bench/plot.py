"""The benchmark's figure: throughput, latency, cache hits and routing, in one PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display here, and none needed
import matplotlib.pyplot as plt


def plot(results: dict[str, Any], path: Path) -> None:
    schedules = results["schedules"]
    routing = results["routing"]
    names = list(schedules)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    bars = [
        (axes[0], "questions / min (sim)", [schedules[n]["questions_per_min_sim"] for n in names]),
        (axes[1], "p95 latency, s (sim)", [schedules[n]["latency_p95_sim_s"] for n in names]),
        (axes[2], "engine busy fraction", [schedules[n]["engine_busy_fraction"] for n in names]),
    ]
    for ax, title, values in bars:
        ax.bar(names, values, color=["tab:gray", "tab:blue"][: len(names)])
        ax.set_title(title)
    labels = list(routing)
    axes[3].bar(
        labels,
        [routing[n]["continuation_cached_fraction"] for n in labels],
        color=["tab:green", "tab:orange"][: len(labels)],
    )
    axes[3].set_title("3 engines: continuation tokens cached")
    axes[3].set_ylim(0, 1)
    fig.suptitle("Search-o1 scheduling on simulated continuous-batching engines")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
