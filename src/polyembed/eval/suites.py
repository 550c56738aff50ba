"""Named suites: `default` (every task type on a representative subset, minutes) and `full` (everything).

The default suite stays a matter of minutes on 2 CPU cores: 20 Tatoeba languages, 3 stsb-multi-mt
languages, the first 300 of Belebele's 900 questions (passages are long), 3 + 3 XCOPA languages.
"""

from __future__ import annotations

from typing import Any

from polyembed.errors import PolyembedError
from polyembed.eval.base import Task
from polyembed.eval.registry import get_task

# 20 Tatoeba languages: 10 high-resource, 10 low-resource (several with < 600 test pairs).
TATOEBA_DEFAULT = (
    "deu",
    "fra",
    "spa",
    "rus",
    "cmn",
    "ara",
    "jpn",
    "tur",
    "hin",
    "fin",
    "amh",
    "kaz",
    "uzb",
    "uig",
    "tat",
    "swh",
    "xho",
    "yid",
    "jav",
    "tel",
)

SUITES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "default": [
        ("sts17", {}),
        ("stsb-multi-mt", {"languages": ["en", "de", "zh"]}),
        ("kardes-sts", {"languages": ["en", "kk", "uz"]}),
        ("semrel", {"languages": ["amh", "hau", "mar"]}),
        ("language-bias", {}),
        ("tatoeba", {"languages": list(TATOEBA_DEFAULT)}),
        ("comparable-mining", {}),
        ("belebele", {"max_questions": 300}),
        ("xcopa", {"languages": ["et", "sw", "zh"]}),
        ("kardes-xcopa", {"languages": ["en", "kk", "ug"]}),
        ("geometry-multi30k", {}),
        ("word-alignment", {"languages": ["de-en"]}),
    ],
    "full": [
        ("sts17", {}),
        ("stsb", {}),
        ("stsb-multi-mt", {}),
        ("kardes-sts", {}),
        ("semrel", {}),
        ("language-bias", {}),
        ("tatoeba", {}),
        ("tico19-retrieval", {}),
        ("tatoeba-challenge-retrieval", {}),
        ("comparable-mining", {}),
        ("belebele", {}),
        ("xcopa", {}),
        ("kardes-xcopa", {}),
        ("geometry-kardes", {}),
        ("geometry-multi30k", {}),
        ("word-alignment", {}),
    ],
}


def suite_tasks(name: str) -> list[Task]:
    """Instantiate the tasks of a named suite."""
    if name not in SUITES:
        raise PolyembedError(f"unknown suite '{name}'; known: {', '.join(SUITES)}")
    return [get_task(task_name, **kwargs) for task_name, kwargs in SUITES[name]]
