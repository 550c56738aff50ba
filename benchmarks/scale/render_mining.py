"""The `mining-scale` table of the scale section: `polyembed mine` at 10^5+ sentences per side, from the JSON
`benchmarks.scale.mining` stores (read here, never measured)."""

from __future__ import annotations

from typing import Any

from benchmarks.scale.spec import COMMAND


def mining_scale_table(saved: dict[str, Any] | None) -> list[str]:
    """The table's lines (empty when nothing is stored: the docs then keep their text)."""
    if not saved:
        return []
    lines = [
        f"`{COMMAND} mining-scale`: `polyembed mine` end to end (k=4, ratio margin, max; both sides `.npy` float16 "
        f"read memory-mapped) on n x n {saved['dimension']}-d pools drawn around {saved['seed_sentences']:,} real "
        f"sentences encoded with {saved['seed_model']} (each row: a real sentence's vector plus noise with their "
        f"covariance); {saved['gold_share']:.0%} of the source rows have a planted translation (a noisy copy) in "
        "the target side. Each run in a fresh process: its wall time, its RSS once polyembed is imported (before "
        "mining) and its peak RSS. F1 against the planted pairs "
        "at the best threshold; 'F1 vs exact': the pairs against those of the exact flat index on the same pool, "
        "or, where that is too slow, both on the first rows of each side ('compared on').",
        "",
        "| n per side | --index | index used | seconds | RSS at start MB | peak RSS MB | F1 (planted) | F1 vs exact "
        "| compared on |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in saved["rows"]:
        pool = "the whole pool" if row["exact_pool"] == row["size"] else f"first {row['exact_pool']:,} rows"
        lines.append(f"| {row['size']:,} | {row['requested']} | {row['index']} | {row['seconds']} | "
                     f"{row['start_rss_mb']:,} | {row['peak_rss_mb']:,} | {row['f1']:.4f} | {row['f1_vs_exact']:.4f} | "
                     f"{pool} |")
    return [*lines, ""]
