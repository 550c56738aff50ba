"""The scale benchmark's docs section (export, mining, BUCC, streaming), rendered from the saved JSON of
`benchmarks.scale.run` only."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common.docs_sections import command_forms, replace_section, shown_section
from benchmarks.common.results import DOCS, load_json
from benchmarks.scale.render_mining import mining_scale_table
from benchmarks.scale.spec import COMMAND, END, OUT, START, TABLES, TATOEBA_LANGUAGES


def _load(name: str) -> dict[str, Any] | None:
    return load_json(OUT / f"{name}.json")


def _model_label(name: str) -> str:
    """A saved student's folder as readers know it: the demo recipe's distilled student."""
    return "distilled demo student (seed 0)" if name.startswith("results/bench/distill/recipe-minilm-old") else name


def _tatoeba_mean(scores: dict[str, float]) -> float | None:
    values = [v for k, v in scores.items() if k.startswith("tatoeba/") and not k.endswith("avg")]
    return float(np.mean(values)) if values else None


def render() -> str:
    """The section from the stored JSON; a table whose JSON is not here keeps the text the docs show."""
    lines = [START, "### Scale: export, mining, streaming", ""]
    blocks: dict[str, list[str]] = {name: [] for name in TABLES}
    exported = _load("export")
    if exported:
        columns = [("STS-B test", "stsb/en"), ("STS17 en-en", "sts17/en-en"),
                   ("stsb-multi-mt en-de", "stsb-multi-mt/en-de")]
        header = " | ".join(f"{title} | kept" for title, _ in columns)
        blocks["export"] += [
            f"`{COMMAND} export`: encoding speed on {exported['sentences']} STS-B test sentences "
            "(batch 64, 2 threads, best of 2); Spearman x100 and Tatoeba accuracy (mean of both directions, "
            f"{', '.join(TATOEBA_LANGUAGES)}); 'kept': share of the torch fp32 score."
            + (f" CPU: {exported['machine']['cpu']}." if exported.get("machine", {}).get("cpu") else ""),
            "",
            f"| model | variant | sentences/s | speed-up | {header} | Tatoeba mean | kept |",
            "|---|---|---|---|" + "---|---|" * (len(columns) + 1),
        ]
        for name, row in exported["rows"].items():
            base = row["variants"]["torch fp32"]

            for label, result in row["variants"].items():
                cells = []
                for _, key in columns:
                    value, reference = result["scores"].get(key), base["scores"].get(key)
                    cells += ["-", "-"] if value is None else [f"{value:.2f}", f"{100 * value / reference:.1f}%"]
                tatoeba, base_tatoeba = _tatoeba_mean(result["scores"]), _tatoeba_mean(base["scores"])
                cells += ["-", "-"] if tatoeba is None or not base_tatoeba else [
                    f"{tatoeba:.2f}", f"{100 * tatoeba / base_tatoeba:.1f}%"]
                blocks["export"].append(
                    f"| {name} | {label} | {result['sentences_per_second']} | "
                    f"{result['sentences_per_second'] / base['sentences_per_second']:.2f}x | {' | '.join(cells)} |"
                )
        blocks["export"] += ["", *_per_language_table(exported["rows"]), *_per_language_table(exported["rows"], "dev"),
                             "minilm-en is an English model: its Tatoeba accuracy (about 6) is near chance, so "
                             "the share kept there says little.", ""]
    chosen = _load("int8-dev")
    if chosen:
        blocks["int8-dev"] += _int8_dev_table(chosen)
    mined = _load("mining")
    if mined:
        blocks["mining"] += [
            f"`{COMMAND} mining`: margin mining end to end (both kNN directions, ratio margin, "
            f"k=4, max) of n x n synthetic {mined['dimension']}-d vectors, target perm[i] = source i + Gaussian "
            "noise (sd 0.6); each index in a fresh process. 'vectors MB': RSS with both pools made, before "
            "mining; 'same as exact': share of the exact index's pairs found; F1 against the planted pairs.",
            "",
            "| n | index | seconds | vectors MB | peak RSS MB | same as exact | F1 | F1 / exact F1 |",
            "|---|---|---|---|---|---|---|---|",
            *[f"| {r['size']:,} | {r['index']} | {r['seconds']} | {r['vectors_rss_mb']} | {r['peak_rss_mb']} | "
              f"{r['same_as_exact']:.4f} | {r['f1']:.4f} | {r['f1_of_exact']:.4f} |" for r in mined["rows"]],
            "",
        ]
    blocks["mining-scale"] += mining_scale_table(_load("mining-scale"))
    mined_bucc = _load("bucc")
    if mined_bucc:
        subsets = sorted({key.split("/")[0] for row in mined_bucc["rows"].values() for key in row})
        blocks["bucc"] += [
            f"`{COMMAND} bucc`: the `bucc-like-mining` task (gold pairs are 5 % of each pool, "
            "the margin threshold fitted on the train split, F1 x100 on test).",
            "",
            f"| model | {' | '.join(subsets)} |",
            "|---|" + "---|" * len(subsets),
            *[f"| {_model_label(name)} | " + " | ".join(f"{row.get(f'{subset}/f1', float('nan')):.2f}"
                                                      for subset in subsets) + " |"
              for name, row in mined_bucc["rows"].items()],
            "",
        ]
    streamed = _load("stream")
    if streamed:
        blocks["stream"] += [
            f"`{COMMAND} stream`: `encode --shard-size {streamed['shard_size']}` with "
            f"{streamed['model']}, a fresh process per corpus size.",
            "",
            "| lines | seconds | sentences/s | peak RSS MB |",
            "|---|---|---|---|",
            *[f"| {r['lines']:,} | {r['seconds']} | {r.get('sentences_per_second', '-')} | {r['peak_rss_mb']} |"
              for r in streamed["rows"]],
            "",
        ]
        if "resume" in streamed:
            plain, resume = streamed["plain_sentence_transformers"], streamed["resume"]
            blocks["stream"] += [
                f"The same {plain['lines']:,} lines, after loading and a warm-up batch, each in a fresh process "
                f"(best of {plain.get('repeats', 1)}): plain sentence-transformers "
                f"`encode` (batch 64, normalised) {plain['sentences_per_second']} sentences/s, `polyembed encode` "
                f"with the default shard size {plain.get('polyembed_sentences_per_second', '-')} sentences/s. "
                "Peak RSS with shards of 2,000 lines; the larger corpus repeats the smaller one. Killed (SIGKILL) with "
                f"{resume['shards_when_killed']} shard files on disk, then run again: "
                f"{resume['files']} files, {'byte-identical' if resume['identical'] else 'NOT identical'} to the "
                "uninterrupted run's.",
                "",
            ]
    shown = shown_section(DOCS, START, END)
    for name in TABLES:  # results/ is not in git: a table measured elsewhere keeps its text from the docs
        kept = [] if blocks[name] else _shown_block(shown, name)
        if kept:
            print(f"{name}: no {name}.json in {OUT}; its table keeps the text the docs show")
        lines += blocks[name] or kept
    lines.append(END)
    section = "\n".join(lines)
    replace_section(DOCS, START, END, section)
    return section


def _kept_cell(value: float | None, reference: float | None) -> str:
    """A score and the share of the reference's kept ('-' where either is missing)."""
    return "-" if value is None or not reference else f"{value:.2f} ({100 * value / reference:.1f}%)"


def _int8_dev_table(chosen: dict) -> list[str]:
    """The int8 recipe's dev-split comparison: speed and each score, with the share of torch fp32's kept."""
    rows = chosen["rows"]
    keys = sorted({key for row in rows.values() for result in row["variants"].values() for key in result["scores"]
                   if not key.endswith("avg") and key != "stsb-multi-mt/en"},
                  key=lambda key: (key != "stsb/en", "-" not in key.split("/")[1], key))
    titles = [{"stsb/en": "STS-B"}.get(key, key.replace("stsb-multi-mt/", "")) for key in keys]
    lines = [f"`{COMMAND} int8-dev`: the int8 graph exported with each `--float32-share` (the "
             "feed-forward output projections whose input range is at least that share of the widest stay "
             "float32), on the dev splits: Spearman x100 of STS-B and stsb-multi-mt (en-X both directions, and "
             f"each language alone), with the share of torch fp32's score kept; speed as in the export table "
             f"({chosen['sentences']} STS-B test sentences, batch 64, 2 threads).", "",
             f"| model | variant | sentences/s | speed-up | {' | '.join(titles)} |",
             "|---|---|---|---|" + "---|" * len(keys)]
    for name, row in rows.items():
        base = row["variants"]["torch fp32"]
        for label, result in row["variants"].items():
            cells = [_kept_cell(result["scores"].get(key), base["scores"].get(key)) for key in keys]
            speed = result["sentences_per_second"]
            lines.append(f"| {name} | {label} | {speed} | {speed / base['sentences_per_second']:.2f}x | "
                         f"{' | '.join(cells)} |")
    return [*lines, ""]


def _per_language_table(rows: dict, split: str = "test") -> list[str]:
    """Each stsb-multi-mt language (alone and en-X) and, on test, each Tatoeba language on its own (the main
    table's means can hide a language that lost more); dev: STS-B too (the export benchmark stores dev scores
    under 'dev/'). Empty where the results have none beyond the main table's."""
    prefix = "" if split == "test" else f"{split}/"
    stsb = f"{prefix}stsb-multi-mt/"
    keys = sorted({key for row in rows.values() for result in row["variants"].values() for key in result["scores"]
                   if (key.startswith(stsb) or (key.startswith("tatoeba/") and not prefix)
                       or (prefix and key == f"{prefix}stsb/en")) and not key.endswith("avg")},
                  key=lambda key: (not key.startswith(prefix + "stsb/"), key.startswith("tatoeba/"),
                                   "-" not in key.removeprefix(stsb), key))
    if not [key for key in keys if key not in (f"{stsb}en-de", f"{stsb}en") and not key.startswith("tatoeba/")]:
        return []
    titles = [{f"{prefix}stsb/en": "STS-B"}.get(key, key.removeprefix(stsb).replace("tatoeba/", "Tatoeba "))
              for key in keys]
    what = ("stsb-multi-mt test (Spearman x100; en-X both directions, and each language alone) and Tatoeba accuracy"
            if not prefix else f"STS-B and stsb-multi-mt {split} (Spearman x100; en-X both directions, and each "
            "language alone), the splits the int8 recipes were chosen on")
    lines = [f"Per language: {what}, with the share of torch fp32's score kept:", "",
             f"| model | variant | {' | '.join(titles)} |", "|---|---|" + "---|" * len(keys)]
    for name, row in rows.items():
        base = row["variants"]["torch fp32"]["scores"]
        for label, result in row["variants"].items():
            cells = [_kept_cell(result["scores"].get(key), base.get(key)) for key in keys]
            lines.append(f"| {name} | {label} | {' | '.join(cells)} |")
    return [*lines, ""]


def _shown_block(shown: str, name: str) -> list[str]:
    """The docs' current text of table `name`: from its command to the next table's command or the section end
    (each command in either of its forms: `command_forms`)."""
    def found(table: str, after: int = 0) -> list[int]:
        return [shown.index(form, after) for form in command_forms(f"`{COMMAND} {table}`") if form in shown[after:]]

    if not found(name):
        return []
    start = min(found(name))
    ends = [index for other in TABLES if other != name for index in found(other, start + 1)]
    return [*shown[start:min(ends, default=len(shown))].rstrip("\n").split("\n"), ""]
