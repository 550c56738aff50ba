"""Test helpers shared across the suite: tiny models built in seconds, a toy bitext, and a SIGKILL helper
for exact-resume tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

TRAINING_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step.",
    "She sells sea shells by the sea shore.",
    "The weather today is sunny with a light breeze from the west.",
    "Reading books every evening is a pleasant habit.",
    "Our train to the capital leaves at nine in the morning.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "Heute ist das Wetter sonnig und warm.",
    "Wir fahren morgen mit dem Zug nach Berlin.",
    "Ich lese jeden Abend ein Buch.",
    "Numbers like 12, 345 and 6789 appear in many texts.",
    "Children play football in the park after school.",
]

def _wordpiece_vocabulary(size: int) -> dict[str, int]:
    """The same WordPiece vocabulary in every process (tests' numbers must not depend on the build): the special
    tokens, every character alone and as a continuation, then the words of TRAINING_TEXTS and PAIRS and the
    continuation bigrams, most frequent first, ties in alphabetical order."""
    from collections import Counter

    from tokenizers import normalizers, pre_tokenizers

    normalizer, pre_tokenizer = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    texts = TRAINING_TEXTS + [sentence for pair in PAIRS for sentence in pair]
    words = Counter(word for text in texts
                    for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    characters = sorted({character for word in words for character in word})
    bigrams = Counter(f"##{word[i:i + 2]}" for word in words for i in range(1, len(word) - 1))
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *characters, *(f"##{c}" for c in characters)]
    for counts in (words, bigrams):
        tokens += [token for token, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
                   if token not in tokens]
    return {token: index for index, token in enumerate(tokens[:size])}


def make_tiny_hf_encoder(folder: Path, tokenizer_kind: str = "wordpiece", seed: int = 0) -> Path:
    """A plain Hugging Face encoder folder: 2-layer random BERT + a tokenizer trained on TRAINING_TEXTS."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    if tokenizer_kind == "wordpiece":
        specials = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
        tok = Tokenizer(models.WordPiece(_wordpiece_vocabulary(250), unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = None  # a fixed vocabulary: the WordPiece trainer breaks ties differently in every process
        first, last = "[CLS]", "[SEP]"
    elif tokenizer_kind == "unigram":
        specials = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}
        tok = Tokenizer(models.Unigram())
        tok.normalizer = normalizers.NFKC()
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.UnigramTrainer(
            vocab_size=200, special_tokens=["<s>", "<pad>", "</s>", "<unk>"], unk_token="<unk>"
        )
        first, last = "<s>", "</s>"
    elif tokenizer_kind == "bpe":
        specials = {"pad_token": "[PAD]", "unk_token": "[UNK]"}
        tok = Tokenizer(models.BPE(unk_token="[UNK]"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]"])
        first = last = None
    else:  # pragma: no cover
        raise ValueError(tokenizer_kind)
    if trainer is not None:
        tok.train_from_iterator(TRAINING_TEXTS * 3, trainer=trainer)
    if first is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{first} $A {last}",
            special_tokens=[(first, tok.token_to_id(first)), (last, tok.token_to_id(last))],
        )
    hf_tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=64, **specials)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=tok.token_to_id(specials["pad_token"]),
    )
    BertModel(config).eval().save_pretrained(str(folder))
    hf_tokenizer.save_pretrained(str(folder))
    return folder


SUBJECTS = [("the cat", "die katze"), ("a dog", "ein hund"), ("my friend", "mein freund"), ("the child", "das kind")]
VERBS = [("sees", "sieht"), ("likes", "mag"), ("finds", "findet"), ("paints", "malt"), ("calls", "ruft")]
OBJECTS = [("the house", "das haus"), ("a tree", "einen baum"), ("the sea", "das meer"), ("my car", "mein auto")]
PAIRS = [(f"{s} {v} {o}", f"{sd} {vd} {od}") for s, sd in SUBJECTS for v, vd in VERBS for o, od in OBJECTS]


def tiny_sentence_transformer(folder: Path, seed: int, hidden: int = 32, mask_token: bool = False) -> Path:
    """A 2-layer random BERT with mean pooling, saved as a sentence-transformers folder (`mask_token`: with a
    [MASK] token added, for masked language modelling)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    hf = make_tiny_hf_encoder(folder.with_name(folder.name + "-hf"), "wordpiece", seed=seed)
    if hidden != 32:
        from transformers import BertConfig, BertModel

        config = BertConfig.from_pretrained(str(hf))
        config.hidden_size, config.intermediate_size = hidden, 2 * hidden
        BertModel(config).save_pretrained(str(hf))
    model = SentenceTransformer(modules=[Transformer(str(hf)), Pooling(hidden, pooling_mode="mean")], device="cpu")
    if mask_token:
        model.tokenizer.add_special_tokens({"mask_token": "[MASK]"})
        model[0].auto_model.resize_token_embeddings(len(model.tokenizer))
    model.save(str(folder))
    return folder




ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def kill_after(run: subprocess.Popen, marker: Path, timeout: float = 300) -> None:
    """SIGKILL `run` as soon as `marker` is written (e.g. the first checkpoint's trainer_state.json). A JSON
    marker counts once it parses: writers create the file before they fill it, and a kill in between is
    a different test (`tests/methods/base/test_run.py`)."""
    deadline = time.time() + timeout
    while not _written(marker) and run.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    if run.poll() is not None:
        error = run.stderr.read().decode("utf-8", "replace")[-3000:] if run.stderr else ""
        raise AssertionError(f"the run ended (exit {run.returncode}) before it could be killed: {error}")
    os.kill(run.pid, signal.SIGKILL)
    run.wait()


def _written(marker: Path) -> bool:
    if marker.suffix != ".json":
        return marker.exists()
    try:
        json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return True


def train_in_subprocess(method: str, config: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`python -m polyembed train METHOD --config CONFIG` ("modular la" for a stage) in a process of its own
    (one a test can SIGKILL), run from the repository root so that test packages such as tests.methods.toy
    import."""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "polyembed", "train", *method.split(), "--config", str(config), *extra],
        env=environment,
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # below the test's own priority: on a busy machine the test process that watches for a checkpoint (to
        # SIGKILL the run there) must not be starved by the runs it watches, or a short run ends first
        preexec_fn=lambda: os.nice(10),
    )


def resume_tolerance() -> float:
    """How far a resumed run's dev scores may sit from an uninterrupted one's: none beyond float rounding on the
    CPU; on a GPU, kernels that add in a varying order (embedding backward, index_add) move scores by ~1e-5."""
    import torch

    return 1e-4 if torch.cuda.is_available() else 1e-6


def killed_and_uninterrupted_runs(method: str, options: dict, folder: Path, kill_at_step: int,
                                  env: dict[str, str] | None = None) -> tuple[dict, dict]:
    """training.json of the run with `options` done in one go, and of the same run SIGKILLed once checkpoint
    `kill_at_step` exists then resumed (`method` as on the command line, e.g. "modular la").

    The uninterrupted run and the killed one run side by side, each on one torch thread (all three runs alike,
    so the comparison is the same computation): on two cores that halves the test's wall time."""
    import yaml

    configs = {}
    for name in ("full", "killed"):
        configs[name] = folder / f"{name}.yaml"
        configs[name].write_text(yaml.safe_dump({**options, "output_dir": str(folder / name)}))
    environment = {**ONE_THREAD, **(env or {})}
    full = train_in_subprocess(method, configs["full"], env=environment)
    with reaped(full):  # the failure that matters is the first: the uninterrupted run is not waited for
        kill_after(train_in_subprocess(method, configs["killed"], env=environment),
                   folder / "killed" / "checkpoints" / f"checkpoint-{kill_at_step}" / "trainer_state.json")
        assert not (folder / "killed" / "model").exists()
        finished(train_in_subprocess(method, configs["killed"], "--resume", env=environment))
        finished(full)
    full_run, killed_run = (json.loads((folder / name / "training.json").read_text()) for name in ("full", "killed"))
    assert killed_run["resumed_from"] and full_run["resumed_from"] is None
    return full_run, killed_run


@contextlib.contextmanager
def reaped(*runs: subprocess.Popen) -> Iterator[None]:
    """On a failure inside the block, kill and wait for each of `runs` still running: a test that runs training
    processes side by side leaves none behind when one of them fails."""
    try:
        yield
    except BaseException:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
        raise


def finished(run: subprocess.Popen, timeout: float = 300) -> None:
    """Wait for `run` (reading its stderr, so a chatty run cannot fill the pipe) and fail with that stderr
    unless it exited 0."""
    try:
        _, stderr = run.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        run.kill()
        _, stderr = run.communicate()
        raise AssertionError(f"the run did not finish in {timeout:.0f} s: {stderr.decode()[-2000:]}") from None
    assert run.returncode == 0, stderr.decode() if stderr else ""


def write_lines(path: Path, lines: list[str]) -> Path:
    """A UTF-8 text file of `lines` (each ended by a newline), its folders made: the fixture files of reader and
    task tests."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


PLAIN_LOAD_SCRIPT = """
import json, sys
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
vectors = model.encode(json.loads(sys.argv[2]), convert_to_numpy=True).tolist()
imported = sorted(name for name in sys.modules if name.startswith("polyembed"))
json.dump({"vectors": vectors, "imported": imported}, open(sys.argv[3], "w"))
"""


def assert_plain_sentence_transformers_loads(folder: str | Path, scratch: Path, sentences: list[str]) -> None:
    """Issue 38's acceptance for a saved model: `SentenceTransformer(folder)` in a process that never imports
    polyembed gives the embeddings `polyembed.load_model(folder)` gives (max abs difference <= 1e-5)."""
    import json

    import numpy as np

    from polyembed.models.loading import load_model

    out = scratch / "plain-vectors.json"
    subprocess.run([sys.executable, "-c", PLAIN_LOAD_SCRIPT, str(folder), json.dumps(sentences), str(out)],
                   check=True, cwd=scratch, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True)
    plain = json.loads(out.read_text(encoding="utf-8"))
    assert plain["imported"] == []
    ours = load_model(str(folder)).encode(sentences)
    assert np.abs(np.array(plain["vectors"]) - ours).max() <= 1e-5
