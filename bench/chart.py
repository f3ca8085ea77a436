"""The bar chart of bench/RESULTS.md, run by the peers' Python (matplotlib lives there).

Reads {"panels": {title: [{"label", "value", "rqconc", "p99"?}, ...]}, "path": png} on stdin.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    spec = json.load(sys.stdin)
    panels = spec["panels"]
    heights = [max(1.6, 0.32 * len(bars) + 0.9) for bars in panels.values()]
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(10, sum(heights)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, (title, bars) in zip(axes[:, 0], panels.items()):
        labels = [b["label"] for b in bars]
        values = [b["value"] for b in bars]
        colors = [
            ("#f2a65a" if b.get("p99") else "#d9534f")
            if b["rqconc"]
            else ("#a8b8c8" if b.get("p99") else "#4a6fa5")
            for b in bars
        ]
        ax.barh(range(len(bars)), values, color=colors)
        ax.set_yticks(range(len(bars)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(
            title + ("  (lower is better)" if "latency" in title else "  (higher is better)"),
            fontsize=10,
            loc="left",
        )
        top = max(values) if values else 1
        for i, value in enumerate(values):
            text = f"{value:.2f}" if "latency" in title else f"{value:,.0f}"
            ax.text(value + top * 0.01, i, text, va="center", fontsize=7)
        ax.set_xlim(0, top * 1.15)
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle(
        "rqconc (red) and its peers (blue), same machine, same Redis, one at a time", fontsize=11
    )
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(spec["path"], dpi=90)


if __name__ == "__main__":
    main()
