"""Word alignment: SimAlign-style alignment from any encoder's token embeddings, eflomal as a statistical
backend, Pharaoh files and the alignment error rate (the WACSE method's word-level training signal, and the
`word-alignment` evaluation)."""

from polyembed.alignment.aer import AlignmentScores, alignment_error_rate
from polyembed.alignment.pharaoh import GoldAlignment, SentencePair, format_links, read_links, read_sentence_pairs
from polyembed.alignment.similarity import EmbeddingAligner, WordAlignment
from polyembed.alignment.statistical import eflomal_align

__all__ = [
    "AlignmentScores",
    "EmbeddingAligner",
    "GoldAlignment",
    "SentencePair",
    "WordAlignment",
    "alignment_error_rate",
    "eflomal_align",
    "format_links",
    "read_links",
    "read_sentence_pairs",
]
