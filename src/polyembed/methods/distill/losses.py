"""The loss of multilingual knowledge distillation (Reimers & Gurevych, 2020, eq. 1).

For a mini-batch B of parallel pairs (s_j, t_j), teacher M and student M^:

    1/|B| * sum_j [ (M(s_j) - M^(s_j))^2 + (M(s_j) - M^(t_j))^2 ]

sentence-transformers' `MSELoss` is exactly this objective (same authors): it embeds every text column
with the student, repeats the teacher embedding (the `label` column) once per column, and takes the mean
squared error. With columns (english, other) that is the student on the source and on the translation,
both pulled to the teacher's embedding of the source. (It averages over embedding dimensions too, a
constant factor that Adam's scale invariance absorbs.) We reuse it rather than re-implement it.

Inputs: a dataset with text columns `english`, `other` and a `label` column holding M(english).

Example::

    from sentence_transformers import SentenceTransformer
    student = SentenceTransformer("me5-small-folder")
    loss = distillation_loss(student)   # then SentenceTransformerTrainer(model=student, loss=loss, ...)
"""

from __future__ import annotations

from typing import Any

from sentence_transformers.sentence_transformer.losses import MSELoss

TEXT_COLUMNS = ("english", "other")
LABEL_COLUMN = "label"


def distillation_loss(student: Any) -> MSELoss:
    """The paper's MSE objective on both the English side and its translation, for `student`."""
    return MSELoss(student)
