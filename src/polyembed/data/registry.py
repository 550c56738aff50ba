"""The dataset registry: what each set is, where its public source lives, and which reader parses it.

Entries are declarative. `DatasetInfo.path()` checks the local copy under the data root and, when it
is missing, raises an error that names the path tried and the public source to download from.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polyembed.data.root import data_root
from polyembed.errors import DatasetNotFoundError, PolyembedError


@dataclass(frozen=True)
class DatasetInfo:
    """Metadata for one dataset; `reader` is 'module:function' so readers load lazily."""

    name: str
    folder: str
    description: str
    languages: tuple[str, ...]
    splits: tuple[str, ...]
    licence: str
    source: str
    reader: str
    citation: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def path(self, root: str | Path | None = None) -> Path:
        """Local folder of this dataset; raises DatasetNotFoundError naming the path and the source."""
        folder = data_root(root) / self.folder
        if not folder.is_dir():
            raise DatasetNotFoundError(self.name, folder, self.source)
        return folder

    def available(self, root: str | Path | None = None) -> bool:
        """True when the local copy exists (no exception)."""
        try:
            self.path(root)
        except PolyembedError:
            return False
        return True

    def reader_function(self) -> Callable[..., Any]:
        """Import and return the reader function."""
        module_name, function_name = self.reader.split(":")
        return getattr(importlib.import_module(module_name), function_name)

    def load(self, *args: Any, root: str | Path | None = None, **kwargs: Any) -> Any:
        """Read (part of) the dataset: reader(folder, *args, **kwargs)."""
        return self.reader_function()(self.path(root), *args, **kwargs)


_R = "polyembed.data.readers"

DATASETS: dict[str, DatasetInfo] = {}


def register_dataset(info: DatasetInfo) -> DatasetInfo:
    """Add a dataset (users may register their own)."""
    DATASETS[info.name] = info
    return info


def get_dataset(name: str) -> DatasetInfo:
    """Look a dataset up by name with a helpful error."""
    try:
        return DATASETS[name]
    except KeyError:
        raise PolyembedError(f"unknown dataset '{name}'; known: {', '.join(sorted(DATASETS))}") from None


TATOEBA_LANGUAGES = tuple(
    """
    afr amh ang ara arq arz ast awa aze bel ben ber bos bre
    bul cat cbk ceb ces cha cmn cor csb cym dan deu dsb dtp
    ell epo est eus fao fin fra fry gla gle glg gsw heb hin
    hrv hsb hun hye ido ile ina ind isl ita jav jpn kab kat
    kaz khm kor kur kzj lat lfn lit lvs mal mar max mhr mkd
    mon nds nld nno nob nov oci orv pam pes pms pol por ron
    rus slk slv spa sqi srp swe swg swh tam tat tel tgl tha
    tuk tur tzl uig ukr urd uzb vie war wuu xho yid yue zsm
    """.split()
)

for _info in [
    DatasetInfo(
        name="sts2017",
        folder="sts2017",
        description="SemEval-2017 Task 1 STS test: 7 tracks x 250 pairs, mono and cross-lingual",
        languages=("ar-ar", "ar-en", "es-es", "es-en", "en-en", "tr-en"),
        splits=("test",),
        licence="CC BY-SA 4.0",
        source="https://alt.qcri.org/semeval2017/task1/ (mirror: github.com/eduardofv/sts_eval data/sources)",
        reader=f"{_R}.sts:read_sts2017",
        citation="Cer et al., SemEval-2017 Task 1",
        notes=(
            "track 6 input has 500 lines for 250 gold scores: lines 1-250 are used",
            "tracks 2 and 6 put the English sentence first; track 4b (WMT) gold bunches at 5",
        ),
    ),
    DatasetInfo(
        name="stsbenchmark",
        folder="stsbenchmark",
        description="STS Benchmark (English), genre/file/year/id/score/s1/s2 TSV",
        languages=("en",),
        splits=("train", "dev", "test"),
        licence="CC BY-SA 4.0 (scores); texts keep their own licences",
        source="https://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark (mirror: github.com/eduardofv/sts_eval)",
        reader=f"{_R}.sts:read_stsbenchmark",
        notes=("503 lines carry 2 extra trailing fields: only the first 7 are read",),
    ),
    DatasetInfo(
        name="stsb-multi-mt",
        folder="stsb-multi-mt",
        description="STS-B machine-translated (DeepL) into 10 languages, row-aligned with STS-B",
        languages=("en", "de", "es", "fr", "it", "ja", "nl", "pl", "pt", "ru", "zh"),
        splits=("train", "dev", "test"),
        licence="CC BY-SA 4.0 (as STS-B)",
        source="https://github.com/PhilipMay/stsb-multi-mt",
        reader=f"{_R}.sts:read_stsb_multi_mt",
        notes=("comma CSV without a header: sentence1, sentence2, score",),
    ),
    DatasetInfo(
        name="kardes-nlu",
        folder="kardes-nlu",
        description="Kardes-NLU: Turkic STS, XCOPA, XNLI translated from English",
        languages=("en", "az", "kk", "ky", "ug", "uz"),
        splits=("dev", "test"),
        licence="no licence file in the source repository",
        source="https://github.com/lksenel/Kardes-NLU",
        reader=f"{_R}.sts:read_kardes_sts",
        notes=("some files start with a BOM", "Uyghur is in Cyrillic script"),
    ),
    DatasetInfo(
        name="kardes-xnli",
        folder="kardes-nlu",
        description="Kardes-NLU XNLI test subset (2,000 pairs) translated into 5 Turkic languages: training "
        "text for the modular recipe (entailment pairs as paraphrases, both sentences as bitext)",
        languages=("en", "az", "kk", "ky", "ug", "uz"),
        splits=("test",),
        licence="no licence file in the source repository (XNLI: CC BY-NC 4.0)",
        source="https://github.com/lksenel/Kardes-NLU",
        reader=f"{_R}.kardes:read_kardes_xnli",
        notes=("used for training only: no evaluation task reads it",),
    ),
    DatasetInfo(
        name="kardes-xcopa",
        folder="kardes-nlu",
        description="Kardes-NLU XCOPA (en + 5 Turkic languages)",
        languages=("en", "az", "kk", "ky", "ug", "uz"),
        splits=("dev", "test"),
        licence="no licence file in the source repository",
        source="https://github.com/lksenel/Kardes-NLU",
        reader=f"{_R}.mcqa:read_kardes_xcopa",
    ),
    DatasetInfo(
        name="semrel2024",
        folder="semrel2024",
        description="SemRel 2024 (SemEval-2024 Task 1) semantic textual relatedness, track A",
        languages=("eng", "amh", "hau", "kin", "mar", "tel", "arq", "ary", "esp"),
        splits=("train", "dev", "test"),
        licence="no licence file; cite the SemRel papers",
        source="https://github.com/semantic-textual-relatedness/Semantic_Relatedness_SemEval2024",
        reader=f"{_R}.sts:read_semrel",
        notes=("Text joins the two sentences with a newline (some with a tab); scores are 0-1",),
    ),
    DatasetInfo(
        name="tatoeba",
        folder="tatoeba",
        description="LASER Tatoeba similarity search test set: 112 languages paired with English",
        languages=TATOEBA_LANGUAGES,
        splits=("test",),
        licence="CC BY 2.0 FR (Tatoeba)",
        source="https://github.com/facebookresearch/LASER/tree/main/data/tatoeba/v1",
        reader=f"{_R}.parallel:read_tatoeba",
        citation="Artetxe & Schwenk 2019, Massively multilingual sentence embeddings",
    ),
    DatasetInfo(
        name="tatoeba-challenge",
        folder="tatoeba-challenge-v2021-08-07",
        description="Tatoeba Translation Challenge test sets v2021-08-07, 19 X-eng pairs",
        languages=(
            "ara",
            "aze",
            "deu",
            "cmn_Hans",
            "fra",
            "hin",
            "ita",
            "jpn",
            "kaz",
            "kor",
            "nld",
            "rus",
            "spa",
            "swa",
            "tat",
            "tuk",
            "tur",
            "uig",
            "uzb",
        ),
        splits=("test",),
        licence="CC BY 2.0 FR (Tatoeba)",
        source="https://github.com/Helsinki-NLP/Tatoeba-Challenge (mirror: Helsinki-NLP/OPUS-MT-testsets)",
        reader=f"{_R}.parallel:read_tatoeba_challenge",
        notes=("overlaps the LASER Tatoeba test for deu/tur/ara/uig/kaz: use exclude_laser_test=True for training",),
    ),
    DatasetInfo(
        name="tico19",
        folder="tico19-test",
        description="TICO-19 COVID-domain test set, English to 9 languages",
        languages=("en", "am", "ar", "es_LA", "fr", "ha", "hi", "ru", "rw", "sw", "zh"),
        splits=("test",),
        licence="CC0",
        source="https://tico-19.github.io/ (mirror: Helsinki-NLP/OPUS-MT-testsets datasets/tico19)",
        reader=f"{_R}.parallel:read_tico19",
    ),
    DatasetInfo(
        name="belebele",
        folder="belebele-eng-deu",
        description="Belebele reading comprehension, English and German (aligned), 900 questions",
        languages=("eng", "deu"),
        splits=("test",),
        licence="CC BY-SA 4.0",
        source="https://github.com/facebookresearch/belebele (reformatted copy: github.com/saeub/item-evaluation)",
        reader=f"{_R}.mcqa:read_belebele",
    ),
    DatasetInfo(
        name="xcopa",
        folder="xcopa",
        description="XCOPA causal commonsense reasoning, human translations into 11 languages",
        languages=("et", "ht", "id", "it", "qu", "sw", "ta", "th", "tr", "vi", "zh"),
        splits=("val", "test"),
        licence="CC BY 4.0",
        source="https://github.com/cambridgeltl/xcopa",
        reader=f"{_R}.mcqa:read_xcopa",
    ),
    DatasetInfo(
        name="multi30k",
        folder="multi30k-task1",
        description="Multi30k task 1 image captions, multi-way parallel en/de/fr/cs",
        languages=("en", "de", "fr", "cs"),
        splits=("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr"),
        licence="research use (Flickr30k terms)",
        source="https://github.com/multi30k/dataset",
        reader=f"{_R}.multiway:read_multi30k",
    ),
    DatasetInfo(
        name="mafand-mt",
        folder="mafand-mt",
        description="MAFAND-MT African news translation, English to 8 languages",
        languages=("hau", "ibo", "yor", "zul", "swa", "amh", "kin", "xho"),
        splits=("train", "dev", "test"),
        licence="CC BY-NC 4.0 (non-commercial)",
        source="https://github.com/masakhane-io/lafand-mt",
        reader=f"{_R}.parallel:read_mafand",
    ),
    DatasetInfo(
        name="muse-dictionaries",
        folder="muse-dictionaries-full",
        description="MUSE full bilingual dictionaries en-X (ar de es fr hi ru tr zh)",
        languages=("ar", "de", "es", "fr", "hi", "ru", "tr", "zh"),
        splits=("full",),
        licence="CC BY-NC 4.0 (non-commercial)",
        source="https://github.com/facebookresearch/MUSE#ground-truth-bilingual-dictionaries",
        reader=f"{_R}.parallel:read_muse_dictionary",
        notes=("files hold 'target @ source' (columns reversed for hunalign)",),
    ),
    DatasetInfo(
        name="word-alignment-gold",
        folder="word-alignment-gold",
        description="Word-alignment gold standards (en-fr, ro-en, ja-en, zh-en, de-en Europarl, simalign samples)",
        languages=("en-fr", "ro-en", "ja-en", "zh-en", "de-en"),
        splits=("test",),
        licence="per set: BSD-3 repository, original distributors' terms",
        source="https://github.com/neulab/awesome-align/tree/master/examples; https://github.com/bicici/SMTData",
        reader=f"{_R}.alignment:read_alignment_gold",
        notes=("awesome-align gold is 1-indexed, Europarl and simalign 0-indexed: readers return 0-indexed links",),
    ),
    DatasetInfo(
        name="paraphrase-en",
        folder="paraphrase-en",
        description="English paraphrase pairs: WikiAuto GEM2021 complex/simple (valid split), AltLex, SNLI excerpts",
        languages=("en",),
        splits=("valid",),
        licence="WikiAuto text from Wikipedia (CC BY-SA); AltLex no licence file; SNLI CC BY-SA 4.0",
        source="https://github.com/chaojiang06/wiki-auto (GEM2021/full_no_split/valid.tsv); "
        "https://github.com/chridey/altlex",
        reader="polyembed.data.paraphrases:read_paraphrase_file",
        notes=("only WikiAuto's valid split is in the snapshot (2,000 complex sentences, 8 simplifications each)",),
    ),
]:
    register_dataset(_info)
