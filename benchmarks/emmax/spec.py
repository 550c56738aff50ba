"""What the EMMA-X benchmark's runner and renderer share: where results and the figure go, the sections' markers,
the languages and tasks every table is built from, and the names of its rows and ablations."""

from __future__ import annotations

from benchmarks.common.results import FIGURES, RESULTS
from polyembed.eval.tasks.retrieval import TatoebaRetrieval

OUT = RESULTS / "emmax-authors"
FIGURE = FIGURES / "emmax-authors-rank-shares.png"
START, END = "<!-- emmax-authors:start -->", "<!-- emmax-authors:end -->"
ABLATION_START, ABLATION_END = "<!-- emmax-ablation:start -->", "<!-- emmax-ablation:end -->"
COMMAND = "python -m benchmarks.emmax.run"
BASE = "me5-small"
WARMUP_LANGUAGES = ["de", "ru", "kk"]
LONG_TAIL = ["tt", "tk", "ug", "uz", "az"]
LASER = {code: TatoebaRetrieval.subset(code) for code in [*WARMUP_LANGUAGES, *LONG_TAIL]}
"""LASER Tatoeba's own code for each language ('de' -> 'deu')."""
MINING = ["tico19:ru", "tico19:fr", "tico19:ar"]
STS_CROSS = ["ar-en", "es-en", "tr-en"]
ROWS = {"base": "me5-small", "warmup": "phase 1 (warm-up)", "warmup-continued": "phase 1 continued (equal compute)",
        "em": "phase 1 + phase 2 (EM)"}
TIMING_NOTES: dict[int, str] = {}
ABLATIONS = {"ranks-2": ("N = 2", {"ranks": 2}, {}), "ranks-8": ("N = 8", {"ranks": 8}, {}),
             "fcn": ("FCN classifier", {"classifier": "fcn"}, {}),
             "no-dual": ("no dual supervision", None, {"dual_supervision": False}),
             "monolingual": ("phase 2 on shuffled monolingual text, own key rank 1", None, {"parallel": False}),
             "queue-only": ("monolingual, queue only (the paper's text)", None, {"parallel": False,
                                                                                 "own_key": False})}
