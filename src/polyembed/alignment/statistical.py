"""Statistical word alignment with eflomal (Östling & Tiedemann 2016), for corpora where a count-based aligner
beats embeddings, and as the reference point in the aligner benchmark. eflomal aligns both directions; they
are joined with the usual symmetrisation heuristics (grow-diag-final-and by default), written here because
fast_align's `atools` is a separate C++ build."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from polyembed.alignment.pharaoh import Link, SentencePair, read_links
from polyembed.alignment.similarity import WordAlignment
from polyembed.environment import require
from polyembed.errors import PolyembedError

Symmetrization = Literal["grow-diag-final-and", "intersection", "union", "forward", "reverse"]
SYMMETRIZATIONS = ("grow-diag-final-and", "intersection", "union", "forward", "reverse")
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    """Koehn et al.'s heuristic: start from the intersection, add union links next to (also diagonally) an
    existing link while one of their words is unaligned, then union links whose two words are both unaligned."""
    alignment = forward & reverse
    union = forward | reverse
    sources = {i for i, _ in alignment}
    targets = {j for _, j in alignment}
    grew = True
    while grew:
        grew = False
        for i, j in sorted(alignment):
            for di, dj in _NEIGHBOURS:
                link = (i + di, j + dj)
                if link in union and link not in alignment and (link[0] not in sources or link[1] not in targets):
                    alignment.add(link)
                    sources.add(link[0])
                    targets.add(link[1])
                    grew = True
    for link in sorted(union):
        if link not in alignment and link[0] not in sources and link[1] not in targets:
            alignment.add(link)
            sources.add(link[0])
            targets.add(link[1])
    return alignment


def symmetrize(forward: set[Link], reverse: set[Link], how: Symmetrization) -> set[Link]:
    if how == "grow-diag-final-and":
        return grow_diag_final_and(forward, reverse)
    return {"intersection": forward & reverse, "union": forward | reverse, "forward": forward,
            "reverse": reverse}[how]


def eflomal_align(pairs: Sequence[SentencePair], symmetrization: Symmetrization = "grow-diag-final-and",
                  seed_iterations: int | None = None) -> list[WordAlignment]:
    """eflomal over the whole corpus (it learns from all pairs at once), both directions, symmetrised. A link's
    score is its confidence: 1.0 where both directions link the two words, 0.5 where only one does (links that
    the symmetrisation adds from the union); eflomal's API gives no per-link posterior."""
    if symmetrization not in SYMMETRIZATIONS:
        raise PolyembedError(f"symmetrization '{symmetrization}': choose from {', '.join(SYMMETRIZATIONS)}")
    require(("eflomal",), "the eflomal aligner", extra="alignment")
    import eflomal

    with tempfile.TemporaryDirectory() as folder:
        forward_file, reverse_file = Path(folder) / "forward", Path(folder) / "reverse"
        aligner = eflomal.Aligner(n_iterations=seed_iterations)
        aligner.align([" ".join(p.source) for p in pairs], [" ".join(p.target) for p in pairs],
                      links_filename_fwd=str(forward_file), links_filename_rev=str(reverse_file))
        forward = read_links(forward_file, pairs=pairs)
        reverse = read_links(reverse_file, pairs=pairs)
    return [WordAlignment({link: 1.0 if link in f.sure and link in r.sure else 0.5
                           for link in symmetrize(f.sure, r.sure, symmetrization)})
            for f, r in zip(forward, reverse, strict=True)]
