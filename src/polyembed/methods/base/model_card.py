"""The model card (README.md) every trained model folder gets: what the model is and how it was made.

Why: a folder of weights says nothing about its base model, its teacher, the data it saw (several of our sets
are non-commercial) or how well it did; sentence-transformers writes a card on every save and users expect one.
The card uses sentence-transformers' front matter (library, tags, languages, base model) so the Hugging Face Hub
and its tooling read it, then says, in prose and tables, the method with its paper and parity table, the
languages, each training dataset with its licence and public source, the dev metrics of the kept model and the
run's whole config. `polyembed eval --out` adds its scores under "Evaluation" (`append_evaluation`).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from polyembed.config import dump_config
from polyembed.models.cards import CARD_FILE, front_matter
from polyembed.outputs import atomic_write

logger = logging.getLogger(__name__)

EVALUATION_HEADING = "## Evaluation"
EVALUATION_START, EVALUATION_END = "<!-- polyembed-eval:start -->", "<!-- polyembed-eval:end -->"
"""`append_evaluation` writes between these markers (a later evaluation of the same task replaces its row)."""
REPO_ROOT = Path(__file__).resolve().parents[4]


def card_text(method: Any, config: Any, result: Any) -> str:
    """The card of a model trained by `method` (a registered TrainingMethod) with `config`, from its
    TrainResult."""
    from polyembed.data.registry import DATASETS

    languages = list(getattr(config, "languages", None) or [])
    teacher = getattr(config, "teacher", None)
    datasets = [name for name in getattr(config, "datasets", None) or [] if isinstance(name, str)]
    folder = Path(result.model_dir)
    lines = [*front_matter(_base_model(config), ["en", *languages] if languages else [], [f"polyembed-{method.name}"],
                           datasets),
             f"# {folder.parent.name}/{folder.name}: a polyembed {method.name} model", "",
             method.summary, ""]
    facts = [("method", f"`{method.name}`" + (f" ({method.paper})" if method.paper else "")),
             ("base model (student)", f"`{_base_model(config)}`")]
    if teacher:
        facts.append(("teacher", f"`{teacher}`"))
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
    lines += [EVALUATION_HEADING, "", EVALUATION_START, "No evaluation yet: `polyembed eval -m THIS_FOLDER --out "
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
    kept = {_row_key(row): row for row in _read_rows(old)}
    for row in rows:
        kept[_row_key(row)] = {**row, "source": source}
    table = ["| task | languages | metric | value | from |", "|---|---|---|---|---|"]
    table += [f"| {row['task']} | {row.get('languages', '')} | {row['metric']} | {card_number(row['value'])} | "
              f"{row.get('source', '')} |" for row in kept.values()]
    data = json.dumps(list(kept.values()), ensure_ascii=False)
    body = "\n".join([f"<!-- rows: {data} -->", *table])
    with atomic_write(path) as handle:
        handle.write(f"{head}{EVALUATION_START}\n{body}\n{EVALUATION_END}{tail}")
    return path


def _read_rows(block: str) -> list[dict[str, Any]]:
    """The card's earlier rows. A hand-edited block is read as far as it makes sense: rows that are not
    objects with a task, a metric and a value are dropped (with a warning), never a crash after the report."""
    for line in block.splitlines():
        if line.startswith("<!-- rows: ") and line.endswith(" -->"):
            try:
                rows = json.loads(line[len("<!-- rows: "):-len(" -->")])
            except ValueError:
                logger.warning("the model card's evaluation rows are not JSON: they are written anew")
                return []
            rows = rows if isinstance(rows, list) else []
            kept = [row for row in rows if isinstance(row, dict) and {"task", "metric", "value"} <= row.keys()]
            if len(kept) < len(rows):
                logger.warning(f"dropped {len(rows) - len(kept)} evaluation rows of the model card that are not "
                               "objects with a task, a metric and a value")
            return kept
    return []


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
