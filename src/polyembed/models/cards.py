"""Model cards (README.md) for the model folders the models layer writes itself: modular bundles and ONNX
exports. Trained models get theirs from `methods/base/model_card.py`, which shares `front_matter`.

Why: a folder without a card does not say what it is or how to load it; sentence-transformers writes one on
every save, and the Hugging Face Hub reads its front matter (library, tags, languages, base model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

CARD_FILE = "README.md"


def front_matter(base_model: str | Sequence[str] | None, languages: Sequence[str], tags: Sequence[str],
                 datasets: Sequence[str] = (), library: str = "sentence-transformers") -> list[str]:
    """The card's YAML header lines (between `---` fences) in the Hub's model-card format."""
    front: dict[str, Any] = {
        "library_name": library,
        "pipeline_tag": "sentence-similarity",
        "tags": ["sentence-transformers", "sentence-similarity", "feature-extraction", "polyembed", *tags],
    }
    if base_model:
        front["base_model"] = base_model if isinstance(base_model, str) else sorted(set(base_model))
    if languages:
        front["language"] = sorted(set(languages))
    if datasets:
        front["datasets"] = list(datasets)
    return ["---", yaml.safe_dump(front, sort_keys=False, allow_unicode=True).rstrip(), "---", ""]


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
    lines = [*front_matter(None, [], ["onnx"], library="onnx"),
             f"# {name}: ONNX export of {settings['source']}", "",
             "Written by `polyembed export` (torch.onnx, onnxruntime's transformer optimiser, and its dynamic "
             "int8 quantiser).", "",
             "| file | what |", "|---|---|", *(f"| `{file}` | {what} |" for file, what in files.items()), "",
             "Each graph maps `input_ids` and `attention_mask` to the last hidden state. The rest is done outside "
             "the graph, as the source model does it: "
             f"{settings['pooling']} pooling over the attention mask, "
             + (f"the prompt `{prompt}` before every input, " if prompt else "no prompt, ")
             + ("L2 normalisation, " if settings.get("normalize") else "no normalisation, ")
             + f"at most {settings['max_seq_length']} tokens; {settings['dimension']} dimensions.", "",
             "## Usage", "", "```python", "import polyembed", "",
             f'model = polyembed.load_model("{name}")  # the int8 graph where there is one',
             f'fp32 = polyembed.load_model("{name}/onnx/model.onnx")', 'vectors = model.encode(["Hello, world!"])',
             "```", "",
             "The folder has sentence-transformers' layout for its ONNX and OpenVINO backends (the torch weights stay "
             "with the source model); they need optimum (`onnx`) or optimum-intel (`openvino`), which pin their own "
             "transformers versions:", "",
             "```python", "from sentence_transformers import SentenceTransformer", "",
             f'model = SentenceTransformer("{name}", backend="onnx", model_kwargs={{"file_name": "model_qint8.onnx"}})',
             f'ov = SentenceTransformer("{name}", backend="openvino")  # export --openvino',
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
