"""Calibration sentences: the text a static int8 export runs through its float32 graph to fix each activation's
range (`polyembed export --static-int8`).

Why a data-layer reader: static quantisation is only as good as the activations it sees while calibrating, so
the sentences should look like what the model will encode: several languages and scripts, real lengths. The
default takes them from the train split of stsb-multi-mt (11 languages, Latin, Cyrillic, Chinese and Japanese
script), which no benchmark scores, so the sentences a static graph was calibrated on are never the ones its
retention is measured on; a user's own file (one sentence a line) replaces them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from polyembed.data.io import read_lines
from polyembed.errors import DataError, PolyembedError, argument

CALIBRATION_DATASET = "stsb-multi-mt"
CALIBRATION_SPLIT = "train"
CALIBRATION_SIZE = 300
"""Sentences calibrated on by default: optimum-intel's static quantisation (which sentence-transformers' OpenVINO
export uses) calibrates on a few hundred samples; more cost export time for little change in the ranges."""


def spread(items: Sequence[str], size: int) -> list[str]:
    """`size` items evenly spaced over `items` (all of them when there are fewer), in their order: a file sorted
    by length or topic still gives a sample of the whole."""
    if len(items) <= size:
        return list(items)
    return [items[i * len(items) // size] for i in range(size)]


def calibration_file_sentences(path: str | Path, size: int = CALIBRATION_SIZE) -> list[str]:
    """`size` sentences spread over a UTF-8 file of one sentence a line (an empty line, a byte that is not UTF-8
    or a file without sentences is a DataError naming the file and line)."""
    lines = read_lines(path)  # strict: names the file and line of a blank line or a bad byte
    sentences = list(dict.fromkeys(line.strip() for line in lines))
    if not sentences:
        raise DataError(path, None, "no sentences to calibrate on (one sentence a line)")
    return spread(sentences, size)


def default_calibration_sentences(size: int = CALIBRATION_SIZE, root: str | Path | None = None) -> list[str]:
    """`size` sentences from stsb-multi-mt's train split under the data root, taken in turn from each of its
    languages (evenly spaced rows of each, both sentences of a pair), so that every language and script has its
    share."""
    from polyembed.data.readers.sts import read_stsb_multi_mt
    from polyembed.data.registry import get_dataset

    dataset = get_dataset(CALIBRATION_DATASET)
    try:
        folder = dataset.path(root)
    except PolyembedError as err:
        raise PolyembedError(f"calibration sentences: {err} (or give your own: "
                             f"{argument('--calibration-file')})") from None
    languages = dataset.languages
    share = -(-size // len(languages))  # per language, rounded up; the total is cut to size below
    columns = []
    for language in languages:
        pairs = read_stsb_multi_mt(folder, language, CALIBRATION_SPLIT)
        column = list(dict.fromkeys(s for pair in zip(pairs.sentences1, pairs.sentences2, strict=True) for s in pair))
        columns.append(spread(column, share))
    interleaved = [column[i] for i in range(share) for column in columns if i < len(column)]
    return list(dict.fromkeys(interleaved))[:size]


def calibration_sentences(path: str | Path | None, size: int = CALIBRATION_SIZE) -> tuple[list[str], str]:
    """(sentences, where they came from, for the export's card) for a static int8 export: `size` sentences of
    the user's file, else the default."""
    if path is not None:
        sentences = calibration_file_sentences(path, size)
        return sentences, f"{len(sentences)} sentences of `{Path(path).name}`"
    from polyembed.data.registry import get_dataset

    sentences = default_calibration_sentences(size)
    languages = len(get_dataset(CALIBRATION_DATASET).languages)
    return sentences, f"{len(sentences)} sentences of {CALIBRATION_DATASET} {CALIBRATION_SPLIT} ({languages} languages)"
