"""Machine translation of training text with any Hugging Face seq2seq model: the modular paper's data step.

Huang et al. translate English paraphrase data into every language, so each language's SE stage trains on
multi-parallel pairs and CLA gets cross-lingual ones. `translate_file` does that for a user's file with a model
they have locally (NLLB-200, M2M-100, a Marian opus-mt model, ...):

- a text file (one sentence per line) -> `source<TAB>translation` per line: bitext, usable as CLA
  `parallel_files` when the source is English;
- a two-column TSV of paraphrase pairs -> both columns translated: `translation1<TAB>translation2`, a
  paraphrase file of the target language for the SE stage (`--cross-lingual` instead writes
  `translation1<TAB>source2` and `translation2<TAB>source1`: CLA paraphrase pairs).

NLLB and M2M name languages with codes of their own (`eng_Latn`, `kaz_Cyrl`): give them as `source_code` /
`target_code`; the target code becomes the forced first generated token, as those models expect.
The output appears whole or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyembed.data.io import read_lines
from polyembed.data.paraphrases import read_paraphrase_file
from polyembed.errors import DataError, PolyembedError, argument
from polyembed.messages import hide_progress
from polyembed.outputs import write_output_file


@dataclass
class TranslationResult:
    output: Path
    rows: int
    sentences: int


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def load_translator(model: str, source_code: str | None = None, target_code: str | None = None,
                    max_length: int = 256, num_beams: int = 1) -> Callable[[Sequence[str]], list[str]]:
    """A batch translation function over a seq2seq model folder (or Hub id), on CPU or the first GPU."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model, **({"src_lang": source_code} if source_code else {}))
        network = AutoModelForSeq2SeqLM.from_pretrained(model)
    except (OSError, ValueError) as err:
        raise PolyembedError(f"translation model '{model}': cannot load a seq2seq model ({err})") from None
    from polyembed.device import resolve_device

    device = resolve_device()
    network.to(device).eval()
    options: dict[str, Any] = {"max_length": max_length, "num_beams": num_beams}
    if target_code:
        token = tokenizer.convert_tokens_to_ids(target_code)
        if token is None or token == tokenizer.unk_token_id:
            raise PolyembedError(f"translation model '{model}': its tokenizer has no language code '{target_code}'")
        options["forced_bos_token_id"] = token

    def translate(sentences: Sequence[str]) -> list[str]:
        inputs = tokenizer(list(sentences), return_tensors="pt", padding=True, truncation=True,
                           max_length=max_length).to(device)
        with torch.inference_mode():
            generated = network.generate(**inputs, **options)
        return [text.strip() for text in tokenizer.batch_decode(generated, skip_special_tokens=True)]

    return translate


def translate_file(
    path: str | Path,
    output: str | Path,
    translate: Callable[[Sequence[str]], list[str]],
    *,
    cross_lingual: bool = False,
    batch_size: int = 16,
    show_progress: bool = True,
) -> TranslationResult:
    """Translate a text file or a paraphrase TSV (see the module docstring) into `output`; every distinct
    sentence is translated once. An empty translation names the input line that produced it."""
    from tqdm.auto import tqdm

    from polyembed.outputs import check_not_an_input

    path, output = Path(path), Path(output)
    check_not_an_input(output, [path], argument("--output"))
    lines = read_lines(path)
    if not lines:
        raise DataError(path, None, "no sentences to translate")
    pairs = read_paraphrase_file(path) if any("\t" in line for line in lines) else None
    if pairs is None and cross_lingual:
        raise DataError(path, None, f"{argument('--cross-lingual')} needs a paraphrase TSV (two tab-separated columns)")
    sources = [s for pair in pairs for s in pair] if pairs else [line.strip() for line in lines]
    distinct = list(dict.fromkeys(sources))
    translated: dict[str, str] = {}
    with tqdm(total=len(distinct), desc=f"translating {path.name}", unit="sentence",
              disable=hide_progress(show_progress)) as bar:
        for batch in _batches(distinct, batch_size):
            for source, target in zip(batch, translate(batch), strict=True):
                translated[source] = target
            bar.update(len(batch))
    for number, source in enumerate(sources):
        if not translated[source]:
            line = number // 2 + 1 if pairs else number + 1
            raise DataError(path, line, f"the model translated '{source[:60]}' to an empty string")
    if pairs is None:
        rows = [(source, translated[source]) for source in sources]
    elif cross_lingual:
        rows = [row for a, b in pairs for row in ((translated[a], b), (translated[b], a))]
    else:
        rows = [(translated[a], translated[b]) for a, b in pairs]
    with write_output_file(output) as handle:
        for first, second in rows:
            handle.write(f"{_one_line(first)}\t{_one_line(second)}\n")
    return TranslationResult(output, len(rows), len(distinct))


def _one_line(text: str) -> str:
    """A translation with no tab or line break of its own, so the TSV stays two columns per line."""
    return " ".join(text.replace("\t", " ").split())
