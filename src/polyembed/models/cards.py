"""Model cards (README.md) for the model folders the models layer writes itself: modular bundles and ONNX
exports. Trained models get theirs from `methods/base/model_card.py`, which shares `front_matter`.

Why: a folder without a card does not say what it is or how to load it; sentence-transformers writes one on
every save, and the Hugging Face Hub reads its front matter (library, tags, languages, base model, licence,
model-index). The front matter is written with huggingface_hub's `ModelCardData`, so it is what the Hub
expects; `base_model` must be a Hub id (the Hub refuses a card whose base model it does not have), so a
built-in's name becomes the id of its source (`hub_model_id`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

logger = logging.getLogger(__name__)

CARD_FILE = "README.md"
HUB_URL = "https://huggingface.co/"
EVALUATION_START, EVALUATION_END = "<!-- polyembed-eval:start -->", "<!-- polyembed-eval:end -->"
"""A trained model's card keeps `polyembed eval`'s rows between these markers (`methods/base/model_card.py`'s
`append_evaluation`; a later evaluation of the same task replaces its row)."""
ROWS_START, ROWS_END = "<!-- rows: ", " -->"
FRONT_MATTER_ORDER = ("library_name", "pipeline_tag", "tags", "base_model", "language", "datasets", "license",
                      "license_name", "license_link")
"""The order of a new card's front matter keys (sentence-transformers' first); `model-index` comes last."""
_FRONT_MATTER = re.compile(r"\A---\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def front_matter(base_model: str | Sequence[str] | None, languages: Sequence[str], tags: Sequence[str],
                 datasets: Sequence[str] = (), library: str = "sentence-transformers",
                 licence: dict[str, str] | None = None, eval_results: Sequence[Any] = (),
                 model_name: str | None = None) -> list[str]:
    """The card's YAML header lines (between `---` fences) in the Hub's model-card format. A built-in base
    model is named by its Hub id; `licence` (license, license_name, license_link) defaults to the base model's
    when it is known (`base_model_licence`); `eval_results` (huggingface_hub EvalResults) become `model-index`
    under `model_name`."""
    from huggingface_hub import ModelCardData

    base: str | list[str] | None = None
    if base_model:
        base = hub_model_id(base_model) if isinstance(base_model, str) else sorted({hub_model_id(name)
                                                                                    for name in base_model})
    if licence is None and isinstance(base_model, str):
        known = base_model_licence(base_model)
        licence = {"license": known} if known else {}
    licence_fields: dict[str, Any] = licence or {}  # ModelCardData's license, license_name, license_link
    data = ModelCardData(
        library_name=library, pipeline_tag="sentence-similarity",
        tags=["sentence-transformers", "sentence-similarity", "feature-extraction", "polyembed", *tags],
        base_model=base, language=sorted(set(languages)) or None, datasets=list(datasets) or None,
        **licence_fields, model_name=model_name if eval_results else None,
        eval_results=list(eval_results) or None)
    return ["---", data.to_yaml(original_order=list(FRONT_MATTER_ORDER)), "---", ""]


def front_matter_yaml(data: dict[str, Any]) -> str:
    """A front matter dict as huggingface_hub's `ModelCardData` writes it, its keys in their order."""
    from huggingface_hub import ModelCardData

    return ModelCardData(**data, ignore_metadata_errors=True).to_yaml(original_order=[
        "model_name" if key == "model-index" else key for key in data])


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """(the card's front matter, the text after it); (None, text) for a card without one. A front matter that
    is not a YAML mapping is None too (the caller then writes a new one)."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return None, text
    try:
        data = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError:
        return None, text[match.end():]
    return (data if isinstance(data, dict) else {}), text[match.end():]


def read_front_matter(folder: str | Path) -> dict[str, Any]:
    """The front matter of the card in `folder` ({} when there is none, or it cannot be read)."""
    try:
        text = (Path(folder) / CARD_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return split_front_matter(text)[0] or {}


def hub_model_id(name: str) -> str:
    """A built-in model's Hub id (from its source URL: me5-small -> intfloat/multilingual-e5-small); any other
    name as it is."""
    from polyembed.models.loading import BUILTIN_MODELS

    builtin = BUILTIN_MODELS.get(name)
    if builtin is not None and builtin.source.startswith(HUB_URL):
        return builtin.source[len(HUB_URL):].strip("/")
    return name


def is_hub_id(name: str) -> bool:
    """Whether `name` reads as a Hugging Face model id ('owner/name' or a legacy 'name') and is neither a local
    path nor a built-in's name."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    from polyembed.models.loading import BUILTIN_MODELS

    if not name or name in BUILTIN_MODELS or name.startswith((".", "/", "~")) or Path(name).expanduser().exists():
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def hub_base_model(name: str) -> str | None:
    """The Hub id a card names as `base_model` for a model trained from `name`: a built-in's source, a Hub id
    itself, or for a local folder the base model its own card names; None when there is none (a local model
    that is not on the Hub: the Hub refuses a base model it does not have)."""
    hub = hub_model_id(name)
    if hub != name or is_hub_id(name):
        return hub
    path = Path(name).expanduser()
    if path.is_dir():
        base = read_front_matter(path).get("base_model")
        if isinstance(base, str) and (hub_model_id(base) != base or is_hub_id(base)):
            return hub_model_id(base)
    return None


def base_model_licence(name: str) -> str | None:
    """The licence (the Hub's spelling: 'mit', 'apache-2.0') of the model `name`: a built-in's from the
    registry, else the `license` of its card where the card is on this machine (a local folder's, or the Hub
    cache's copy of a Hub model's); None when unknown. No network."""
    from polyembed.models.loading import BUILTIN_MODELS

    if name in BUILTIN_MODELS:
        return BUILTIN_MODELS[name].licence.lower()
    path = Path(name).expanduser()
    if path.is_dir():
        card = read_front_matter(path)
    elif is_hub_id(name):
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, CARD_FILE)
        card = read_front_matter(Path(cached).parent) if isinstance(cached, str) else {}
    else:
        card = {}
    licence = card.get("license")
    return licence if isinstance(licence, str) and licence else None


def read_rows(block: str) -> list[dict[str, Any]]:
    """The evaluation rows of a card's block. A hand-edited block is read as far as it makes sense: rows that
    are not objects with a task, a metric and a value are dropped (with a warning), never a crash."""
    for line in block.splitlines():
        if line.startswith(ROWS_START) and line.endswith(ROWS_END):
            try:
                rows = json.loads(line[len(ROWS_START):-len(ROWS_END)])
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


def card_rows(text: str) -> list[dict[str, Any]]:
    """The evaluation rows of a card (between the markers); [] when it has none."""
    if EVALUATION_START not in text or EVALUATION_END not in text:
        return []
    return read_rows(text.split(EVALUATION_START, 1)[1].split(EVALUATION_END, 1)[0])


def evaluation_results(rows: Sequence[dict[str, Any]]) -> list[Any]:
    """The card's evaluation rows as huggingface_hub `EvalResult`s (the Hub's `model-index`): the task's type
    and name, its dataset (the row's `dataset`, else the task's name; the languages as its config when they
    are one subset; the row's split) and the metric with its value as the row has it. A row without the task
    facts eval adds (`task_type`, `dataset`, `split`: written by an earlier polyembed) says `other`."""
    from huggingface_hub import EvalResult

    results = []
    for row in rows:
        task, metric, value = str(row["task"]), str(row["metric"]), row["value"]
        dataset = str(row.get("dataset") or task)
        subsets = str(row.get("languages") or "")
        results.append(EvalResult(
            task_type=str(row.get("task_type") or "other"), task_name=task, dataset_type=dataset,
            dataset_name=dataset, dataset_config=subsets if subsets and not re.search(r"[,\s]", subsets) else None,
            dataset_split=str(row["split"]) if row.get("split") else None, metric_type=metric,
            metric_value=value if isinstance(value, int | float) else str(value),
            metric_name=f"{metric} ({subsets})" if subsets else metric))
    return results


def with_model_index(text: str, model_name: str, rename: bool = False) -> str:
    """The card with its front matter written again: in a card with evaluation markers, `model-index` from
    its rows (named as the card's model-index was, else or with `rename` `model_name`; none without rows);
    and a `base_model` that is not a Hub id replaced by one (a built-in's name) or left out (a local folder:
    the Hub refuses such a card). The text after the front matter is kept as it is."""
    from huggingface_hub.repocard_data import eval_results_to_model_index

    data, body = split_front_matter(text)
    data = dict(data or {})
    base = data.get("base_model")
    if isinstance(base, str) and not is_hub_id(base):
        fixed = hub_base_model(base)
        if fixed is None:
            logger.warning(f"the model card's base_model '{base}' is not a Hugging Face id: left out")
            del data["base_model"]
        else:
            data["base_model"] = fixed
    if EVALUATION_START in body:
        index = data.pop("model-index", None)
        if not rename and isinstance(index, list) and index and isinstance(index[0], dict) and isinstance(
                index[0].get("name"), str):
            model_name = index[0]["name"]
        results = evaluation_results(card_rows(body))
        if results:
            data["model-index"] = eval_results_to_model_index(model_name, results)
    if not data:
        return body
    return f"---\n{front_matter_yaml(data)}\n---\n{body}"


def card_for_hub(folder: str | Path, repo_id: str) -> str | None:
    """The card `polyembed push` publishes for the model in `folder` as `repo_id` (None: the folder has none).
    A polyembed card of a trained model (one with evaluation markers) gets its front matter written again
    (`with_model_index`, named `repo_id`) and loads the model from the Hub in its usage examples; any other
    card (an export's is covered by its checksum record) only loses a `base_model` the Hub would refuse."""
    path = Path(folder) / CARD_FILE
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if EVALUATION_START not in text:
        base = (split_front_matter(text)[0] or {}).get("base_model")
        return with_model_index(text, repo_id) if isinstance(base, str) and not is_hub_id(base) else text
    name = Path(folder).resolve().name
    text = re.sub(r'(load_model|SentenceTransformer)\("([^"]+)"',
                  lambda match: f'{match.group(1)}("{repo_id}"' if Path(match.group(2)).name == name
                  else match.group(0), text)
    return with_model_index(text, repo_id, rename=True)


def local_model_name(folder: str | Path) -> str:
    """The name a local card's model-index gives the model: a run's model/ folder is named after its run."""
    path = Path(folder).resolve()
    return path.parent.name if path.name == "model" and path.parent.name else path.name


def bundle_card_text(name: str, pivot: str, languages: Sequence[str], default_mode: str, unknown_language: str,
                     adapters: dict[str, bool], router: bool) -> str:
    """The card of a modular bundle: its languages and adapters, and how to load it with and without polyembed."""
    other = next((code for code in languages if code != pivot), pivot)
    lines = [*front_matter(None, languages, ["polyembed-modular"]),
             f"# {name}: a polyembed modular bundle", "",
             "One sentence encoder per language (Huang et al. 2024, modular sentence encoders), each aligned to "
             f"the `{pivot}` pivot by a cross-lingual alignment (CLA) adapter. Mode `cross` (this bundle's "
             f"default: `{default_mode}`) runs a language's encoder with its adapter, so vectors compare across "
             "languages; mode `mono` without it, the specialised monolingual encoder unchanged.", "",
             "| language | folder | CLA adapter |", "|---|---|---|",
             *(f"| {code}{' (pivot)' if code == pivot else ''} | `{code}/` | {'yes' if adapters.get(code) else 'no'} |"
               for code in languages), "",
             f"A language outside the table: {'an error' if unknown_language == 'error' else 'the pivot encodes it'}.",
             "", "## Usage", "", "```python", "import polyembed", "",
             f'model = polyembed.load_model("{name}")',
             f'vectors = model.encode(["..."], language="{other}")            # mode {default_mode}',
             f'mono = model.encode(["..."], language="{other}", mode="mono")  # without the adapter',
             'routed = model.encode(["...", "..."])  # no language: the language identifier routes each row', "```",
             ""]
    if router:
        lines += ["With sentence-transformers alone (no polyembed installed): a `Router` whose route is the "
                  "language; `trust_remote_code` loads `polyembed_parallel_adapter.py`, the adapter module the "
                  "bundle carries.", "", "```python", "from sentence_transformers import SentenceTransformer", "",
                  f'model = SentenceTransformer("{name}", trust_remote_code=True)',
                  f'vectors = model.encode(["..."], task="{other}")', "```", "",
                  f"For mode `mono`, load a language's folder (`{other}/`): it is the encoder without its adapter.",
                  ""]
    return "\n".join(lines)


def export_card_text(name: str, settings: dict[str, Any], files: dict[str, str]) -> str:
    """The card of an ONNX export: the source model, each graph, and what the graph leaves to the caller."""
    prompt = settings.get("prompt") or ""
    # export --static-int8: int8 graphs with calibrated activation ranges, for onnxruntime and for OpenVINO
    from polyembed.models.export_files import OPENVINO_STATIC_INT8_FILE, STATIC_INT8_FILE

    static = {variable: file for variable, file in (("static_onnx", STATIC_INT8_FILE),
                                                     ("static_ov", OPENVINO_STATIC_INT8_FILE)) if file in files}
    quantisers = "and its dynamic int8 quantiser" + (
        "; static int8: onnxruntime's static quantiser" + (" and NNCF" if "static_ov" in static else "")
        if static else "")
    lines = [*front_matter(None, [], ["onnx"], library="onnx"),
             f"# {name}: ONNX export of {settings['source']}", "",
             f"Written by `polyembed export` (torch.onnx, onnxruntime's transformer optimiser, {quantisers}).", "",
             "| file | what |", "|---|---|", *(f"| `{file}` | {what} |" for file, what in files.items()), "",
             "Each graph maps `input_ids` and `attention_mask` to the last hidden state. The rest is done outside "
             "the graph, as the source model does it: "
             f"{settings['pooling']} pooling over the attention mask, "
             + (f"the prompt `{prompt}` before every input, " if prompt else "no prompt, ")
             + ("L2 normalisation, " if settings.get("normalize") else "no normalisation, ")
             + f"at most {settings['max_seq_length']} tokens; {settings['dimension']} dimensions.", "",
             "## Usage", "", "```python", "import polyembed", "",
             f'model = polyembed.load_model("{name}")  # the int8 graph where there is one',
             f'fp32 = polyembed.load_model("{name}/onnx/model.onnx")',
             *(f'{variable} = polyembed.load_model("{name}/{file}")  # static int8'
               for variable, file in static.items()),
             'vectors = model.encode(["Hello, world!"])', "```", "",
             "The folder has sentence-transformers' layout for its ONNX and OpenVINO backends (the torch weights stay "
             "with the source model); they need optimum (`onnx`) or optimum-intel (`openvino`), which pin their own "
             "transformers versions:", "",
             "```python", "from sentence_transformers import SentenceTransformer", "",
             f'model = SentenceTransformer("{name}", backend="onnx", model_kwargs={{"file_name": "model_qint8.onnx"}})',
             f'ov = SentenceTransformer("{name}", backend="openvino")  # export --openvino',
             *([f'ov_static = SentenceTransformer("{name}", backend="openvino", model_kwargs={{"file_name": '
                f'"{Path(OPENVINO_STATIC_INT8_FILE).name}"}})'] if "static_ov" in static else []),
             "```", "",
             "OpenVINO computes in bfloat16 on CPUs that have it unless told otherwise; "
             '`model_kwargs={"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}` gives the graph\'s own float32 '
             "(polyembed's `load_model` does so).", ""]
    return "\n".join(lines)


def derived_card_text(name: str, what: str, source: str, facts: dict[str, Any], report_file: str,
                      languages: Sequence[str] = (), tags: Sequence[str] = ()) -> str:
    """The card of a model made from another without training (a pruned vocabulary, a transferred one): what
    was done, the figures of its report, and that it is a plain sentence-transformers folder."""
    lines = [*front_matter(source, languages, tags), f"# {name}: {what} of {source}", "",
             f"Written by polyembed; the full report is `{report_file}`.", "",
             "| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in facts.items()), "",
             "## Usage", "", "A plain sentence-transformers folder (the prompts of the source model are kept):", "",
             "```python", "from sentence_transformers import SentenceTransformer", "",
             f'model = SentenceTransformer("{name}")', 'vectors = model.encode(["Hello, world!"])', "```", "",
             "or `polyembed.load_model(...)`, which adds routing and the toolkit's evaluation.", ""]
    return "\n".join(lines)
