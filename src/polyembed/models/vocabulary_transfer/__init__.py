"""FOCUS vocabulary transfer: give an existing sentence encoder a new, target-language vocabulary.

Why: an encoder trained on one language (or a huge multilingual vocabulary) tokenises a new language into
many short, poorly-trained pieces. Both the multilingual-distillation recipe (Reimers & Gurevych 2020) and the
modular-encoder recipe (language-specific tokenizer + embeddings, initialised with FOCUS) start by giving the
encoder a tokenizer trained on target-language text, and need a good first guess for its embedding matrix.

FOCUS (Dobler & de Melo, EMNLP 2023), as implemented here:

1. **New tokenizer** (`train_tokenizer`): trained on target text, same family as the source (WordPiece or
   Unigram), same normaliser, and the source's special tokens (placed first, in the source's id order).
2. **Overlap**: tokens are compared in a canonical form that hides how each family marks word starts
   (SentencePiece ``▁x`` and WordPiece ``x`` are both ``▁x``; ``##x`` and SentencePiece ``x`` are both
   ``x``). Overlapping tokens copy their old embedding row exactly; special tokens are matched by string,
   then by role (``cls_token``, ``pad_token``...).
3. **Auxiliary space**: static token vectors learnt from the target corpus tokenised with the NEW tokenizer.
4. **Interpolation**: every other new token with an auxiliary vector becomes a convex combination of the old
   rows of the overlapping tokens, weighted by ``sparsemax`` of its cosine similarities to them in the
   auxiliary space (only overlapping tokens that have an auxiliary vector are used as anchors).
5. **Random**: a new token without a usable auxiliary vector (seen fewer than ``min_count`` times in the
   corpus) is drawn from a normal with the old matrix's per-dimension mean and std. That is FOCUS's rule and
   the default. ``unseen="decompose"`` instead gives such a token the mean of the old rows of the pieces the
   OLD tokenizer splits its text into (the rule of Fast Vocabulary Transfer, Gee et al. 2022); only a token
   the old tokenizer cannot spell (no pieces, or only its unknown token) stays random. Why: on a small corpus
   many tokens miss ``min_count`` (35% of a 16k vocabulary trained on 20k sentences), and a random row throws
   away what the old model knew about the token's pieces (docs/benchmarks.md compares the two rules).

Auxiliary space (`auxiliary_space`): FOCUS trains fastText (CBOW) on the re-tokenised corpus; "fasttext"
does that with gensim's FastText and the FOCUS code's settings (`fasttext_embeddings`). The default,
"ppmi-svd", is the count-based equivalent: positive PMI (context-distribution smoothing 0.75, word2vec-style
distance-weighted window) of the token co-occurrence matrix, factorised with a truncated SVD (vectors
U·sqrt(S)). Levy & Goldberg (2014) show skip-gram/CBOW with negative sampling implicitly factorise this
shifted-PMI matrix, and Levy, Goldberg & Dagan (2015) find PPMI-SVD on par with them for word similarity,
especially on small corpora. Both make tokens similar exactly when they occur in similar contexts of target
text, which is what FOCUS needs; PPMI-SVD is deterministic (seeded randomized SVD) and needs no training
epochs, fastText adds character n-grams that smooth the vectors of the tokens it keeps. The two are compared
in docs/benchmarks.md ("FOCUS auxiliary space").

`transfer_vocabulary` does it all for a sentence-transformers model and saves a working folder;
`transfer_vocabulary_per_language` trains one tokenizer per language and saves one model per language.
"""

from polyembed.models.vocabulary_transfer.auxiliary import cooccurrence_embeddings, fasttext_embeddings
from polyembed.models.vocabulary_transfer.common import (
    AUXILIARY_SPACES,
    REPORT_FILE,
    UNSEEN_RULES,
    AuxiliarySpace,
    TokenizerKind,
    TransferReport,
    UnseenRule,
    VocabularyTransferError,
)
from polyembed.models.vocabulary_transfer.focus import check_choices, focus_embeddings, sparsemax
from polyembed.models.vocabulary_transfer.tokenizer import canonical_vocabulary, source_kind, train_tokenizer
from polyembed.models.vocabulary_transfer.transfer import (
    swap_vocabulary,
    transfer_vocabulary,
    transfer_vocabulary_per_language,
)

__all__ = [
    "AUXILIARY_SPACES",
    "REPORT_FILE",
    "UNSEEN_RULES",
    "AuxiliarySpace",
    "TokenizerKind",
    "TransferReport",
    "UnseenRule",
    "VocabularyTransferError",
    "canonical_vocabulary",
    "check_choices",
    "cooccurrence_embeddings",
    "fasttext_embeddings",
    "focus_embeddings",
    "source_kind",
    "sparsemax",
    "swap_vocabulary",
    "train_tokenizer",
    "transfer_vocabulary",
    "transfer_vocabulary_per_language",
]
