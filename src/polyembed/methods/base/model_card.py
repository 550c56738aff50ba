"""The model card (README.md) every trained model folder gets: what the model is and how it was made.

Why: a folder of weights says nothing about its base model, its teacher, the data it saw (several of our sets
are non-commercial) or how well it did; sentence-transformers writes a card on every save and users expect one.
The card uses sentence-transformers' front matter (library, tags, languages, base model as a Hub id, licence)
so the Hugging Face Hub and its tooling read it, then says, in prose and tables, the method with its paper and
parity table, the languages, the licence and why (the base model's, or non-commercial when the training data
is), each training dataset with its licence and public source, the dev metrics of the kept model and the run's
whole config. `polyembed eval --output` adds its scores under "Evaluation" (`append_evaluation`), and those rows
are the front matter's `model-index` too (`models.cards.with_model_index`), so the Hub shows them;
`polyembed push` writes the same again for the repository (`models.cards.card_for_hub`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from polyembed.config import dump_config
from polyembed.models.cards import (
    CARD_FILE,
    EVALUATION_END,
    EVALUATION_START,
    base_model_licence,
    front_matter,
    hub_base_model,
    hub_model_id,
    local_model_name,
    read_rows,
    with_model_index,
)
from polyembed.outputs import atomic_write

logger = logging.getLogger(__name__)

EVALUATION_HEADING = "## Evaluation"
REPO_ROOT = Path(__file__).resolve().parents[4]


def card_text(method: Any, config: Any, result: Any) -> str:
    """The card of a model trained by `method` (a registered TrainingMethod) with `config`, from its
    TrainResult."""
    from polyembed.data.registry import DATASETS

    own_files = getattr(config, "parallel_files", None) or []
    languages = list(dict.fromkeys([*(getattr(config, "languages", None) or []),  # the user's files' too
                                    *(spec.partition("=")[0].strip() for spec in own_files)]))
    teacher = getattr(config, "teacher", None)
    datasets = [name for name in getattr(config, "datasets", None) or [] if isinstance(name, str)]
    folder = Path(result.model_dir)
    student = _base_model(config)
    base = hub_base_model(student)
    licence, licence_lines = _licence(student, datasets, getattr(config, "parallel_files", None) or [])
    lines = [*front_matter(base, ["en", *languages] if languages else [], [f"polyembed-{method.name}"], datasets,
                           licence=licence),
             f"# {_title(method.name, base or student, languages)}", "", method.summary, ""]
    facts = [("method", f"`{method.name}`" + (f" ({method.paper})" if method.paper else "")),
             ("base model (student)", f"`{base or student}`" + (f" (from `{student}`)" if base and base != student
                                                                 else ""))]
    if teacher:
        facts.append(("teacher", f"`{hub_model_id(teacher)}`" + (f" (from `{teacher}`)" if hub_model_id(teacher)
                                                                 != teacher else "")))
    if languages:
        facts.append(("languages", ", ".join(languages) + " (and English)"))
    saved = result.max_seq_length.get("saved") if result.max_seq_length else None
    if saved:
        facts.append(("maximum tokens per input", f"{saved} (trained at {result.max_seq_length.get('training')})"))
    facts.append(("training", f"{result.steps} steps, {result.train_pairs_seen:,} training rows, seed {config.seed}"))
    parity = _parity_doc(method)
    if parity:
        facts.append(("parity with the paper", parity))
    lines += ["| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in facts), ""]
    lines += ["## Licence", "", *licence_lines, ""]
    if datasets:
        lines += ["## Training data", "",
                  "Check each licence before you use this model: some sets are for non-commercial use only.", "",
                  "| dataset | licence | source |", "|---|---|---|"]
        for name in datasets:
            info = DATASETS.get(name)
            lines.append(f"| {name} | {info.licence} | {info.source} |" if info else f"| {name} | unknown | |")
        lines.append("")
    lines += ["## Dev metrics of this model", ""]
    if result.best:
        lines += ["| metric | value |", "|---|---|",
                  *(f"| {key} | {card_number(value)} |" for key, value in result.best.items()
                    if key not in ("epoch", "step")), ""]
    else:
        lines += ["No dev evaluation was logged.", ""]
    lines += [EVALUATION_HEADING, "", EVALUATION_START, "No evaluation yet: `polyembed eval -m THIS_FOLDER --output "
              "results/eval` adds its scores here.", EVALUATION_END, "",
              "## Usage", "", "```python", "import polyembed", "",
              f'model = polyembed.load_model("{folder}")',
              'vectors = model.encode(["Hello, world!"], language="en", normalize=True)', "```", ""]
    if (folder / "router_config.json").is_file():  # a modular bundle: a Router whose route is the language
        lines += ["The folder is a sentence-transformers `Router` model too, the language being the route:", "",
                  "```python", "from sentence_transformers import SentenceTransformer", "",
                  f'model = SentenceTransformer("{folder}", trust_remote_code=True)',
                  'vectors = model.encode(["Hello, world!"], task="en")', "```", ""]
    elif (folder / "modules.json").is_file():
        lines += ["The folder is a sentence-transformers model too:", "", "```python",
                  "from sentence_transformers import SentenceTransformer", "",
                  f'model = SentenceTransformer("{folder}")', 'vectors = model.encode(["Hello, world!"])', "```", ""]
    lines += ["## Training configuration", "", "```yaml", dump_config(config).rstrip(), "```", ""]
    return "\n".join(lines)


def _title(method: str, base: str, languages: Sequence[str]) -> str:
    """'<base model> fine-tuned with polyembed's <method> for <languages>': what the model is, not where its
    folder was."""
    codes = list(dict.fromkeys(["en", *languages])) if languages else []
    where = (f" for {', '.join(codes)}" if len(codes) <= 5 else f" for {len(codes)} languages") if codes else ""
    return f"{base} fine-tuned with polyembed's {method}{where}"


NON_COMMERCIAL = re.compile(r"\bNC\b|non-commercial|noncommercial|research use", re.IGNORECASE)
"""Dataset licences (the registry's wording) that allow no commercial use: CC BY-NC, 'research use'."""
CC_BY_NC = re.compile(r"CC BY-NC 4\.0", re.IGNORECASE)


def _licence(student: str, datasets: Sequence[str], own_files: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The card's licence fields (the Hub's `license`, with `license_name`/`license_link` for `other`) and the
    prose saying why. Trained weights inherit the base model's licence; trained on non-commercial data they
    are offered for non-commercial use only, which is the honest reading of the data's terms: `cc-by-nc-4.0`
    when every such set is CC BY-NC 4.0, else `other` linking the first set's terms."""
    from polyembed.data.registry import DATASETS

    base_licence = base_model_licence(student)
    restricted = [DATASETS[name] for name in datasets if name in DATASETS and NON_COMMERCIAL.search(
        DATASETS[name].licence)]
    base_words = (f"The base model `{hub_model_id(student)}` is released under `{base_licence}`"
                  if base_licence else f"The licence of the base model `{student}` is not known here: check it")
    own = ([f"The parallel files of your own ({', '.join(f'`{spec}`' for spec in own_files)}) are under "
            "whatever terms they came with; add them here before you share the model."] if own_files else [])
    if restricted:
        names = ", ".join(f"{info.name} ({info.licence})" for info in restricted)
        if all(CC_BY_NC.search(info.licence) for info in restricted):
            fields = {"license": "cc-by-nc-4.0"}
            words = "CC BY-NC 4.0"
        else:
            link = re.search(r"https?://\S+", restricted[0].source)
            fields = {"license": "other", "license_name": "non-commercial-training-data",
                      **({"license_link": link.group(0).rstrip(");,")} if link else {})}
            words = "non-commercial terms (`other`)"
        return fields, [f"{base_words}; this model was trained on {names}, data for non-commercial use only, so "
                        f"its weights are offered under {words}: non-commercial use only. The licence of each "
                        "training set is under \"Training data\".", *own]
    if base_licence:
        return {"license": base_licence}, [f"{base_words}; the trained weights inherit it (`{base_licence}`). "
                                           "Check the training data's licences below too.", *own]
    return ({"license": "other", "license_name": "unknown"},
            [f"{base_words} before you use or share this model (the card says `other`: unknown).", *own])


def write_model_card(method: Any, config: Any, result: Any) -> Path:
    """Write README.md into the result's model folder (atomically) and return its path."""
    path = Path(result.model_dir) / CARD_FILE
    with atomic_write(path) as handle:
        handle.write(card_text(method, config, result))
    return path


def append_evaluation(model_dir: str | Path, rows: list[dict[str, Any]], source: str) -> Path | None:
    """Put evaluation rows (task, metric, value, languages) into the card of the model in `model_dir`, between
    the evaluation markers; a row of the same task, metric and languages replaces the earlier one. A folder
    without a polyembed card is left alone (None)."""
    path = Path(model_dir) / CARD_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if EVALUATION_START not in text or EVALUATION_END not in text:
        return None
    head, rest = text.split(EVALUATION_START, 1)
    old, tail = rest.split(EVALUATION_END, 1)
    kept = {_row_key(row): row for row in read_rows(old)}
    for row in rows:
        kept[_row_key(row)] = {**_task_facts(str(row["task"])), **row, "source": source}
    table = ["| task | languages | metric | value | from |", "|---|---|---|---|---|"]
    table += [f"| {row['task']} | {row.get('languages', '')} | {row['metric']} | {card_number(row['value'])} | "
              f"{row.get('source', '')} |" for row in kept.values()]
    data = json.dumps(list(kept.values()), ensure_ascii=False)
    body = "\n".join([f"<!-- rows: {data} -->", *table])
    text = with_model_index(f"{head}{EVALUATION_START}\n{body}\n{EVALUATION_END}{tail}",
                            local_model_name(path.parent))
    with atomic_write(path) as handle:
        handle.write(text)
    return path


COMPARISON_START, COMPARISON_END = "<!-- polyembed:comparison:start -->", "<!-- polyembed:comparison:end -->"


def append_comparison(model_dir: str | Path, comparison: Any, source: str) -> Path | None:
    """Put a before/after comparison (`eval.compare.Comparison`) into the card of the model in `model_dir`, as
    its own section between markers (an earlier comparison is replaced); the card's other text is kept. A folder
    without a polyembed card is left alone (None)."""
    path = Path(model_dir) / CARD_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if EVALUATION_END not in text:
        return None
    block = "\n".join([COMPARISON_START, f"## Compared with `{comparison.baseline}`", "",
                       f"Main scores of this model and `{comparison.baseline}` on the same rows ({source}); a "
                       "change in bold lies outside its 95 % interval.", "", comparison.markdown().rstrip("\n"),
                       COMPARISON_END])
    if COMPARISON_START in text and COMPARISON_END in text:
        head, rest = text.split(COMPARISON_START, 1)
        text = head + block + rest.split(COMPARISON_END, 1)[1]
    else:
        head, tail = text.split(EVALUATION_END, 1)
        text = f"{head}{EVALUATION_END}\n\n{block}{tail}"
    with atomic_write(path) as handle:
        handle.write(text)
    return path


def _task_facts(task: str) -> dict[str, str]:
    """What the Hub's model-index says of a row beyond the card's columns, from the task registry: the task's
    type, its dataset when it has one, its split when it has only one (nothing for a task not registered)."""
    import polyembed.eval.registry  # noqa: F401 - registers the built-in tasks
    from polyembed.eval.base import TASKS

    if task not in TASKS:
        return {}
    metadata = TASKS[task].metadata
    facts = {"task_type": metadata.type}
    if len(metadata.datasets) == 1:
        facts["dataset"] = metadata.datasets[0]
    if len(metadata.splits) == 1:
        facts["split"] = metadata.splits[0]
    return facts


def _row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return (str(row["task"]), str(row.get("languages", "")), str(row["metric"]))


def _base_model(config: Any) -> str:
    """The model training started from ('teacher': a copy of the teacher)."""
    return config.teacher if config.student == "teacher" and getattr(config, "teacher", None) else config.student


def _parity_doc(method: Any) -> str | None:
    """The method's parity table in the polyembed docs (docs/methods/<folder>.md), when there is one."""
    folder = method.config_class.__module__.split(".")[2] if method.config_class.__module__.startswith(
        "polyembed.methods.") else None
    doc = REPO_ROOT / "docs" / "methods" / f"{folder}.md"
    return f"docs/methods/{folder}.md in the polyembed repository" if folder and doc.is_file() else None


def card_number(value: Any) -> str:
    """Scores (>= 1) with two decimals, small measures (losses, MSE) with four significant digits."""
    if not isinstance(value, float):
        return str(value)
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4g}"
