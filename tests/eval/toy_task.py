"""A toy evaluation task: one declarative class and its registration are all a new task needs; the runner, the
embedding cache and the report come from `polyembed.eval`. docs/contributing/evaluation-task.md shows this file as
it is."""

from __future__ import annotations

import numpy as np

from polyembed.eval.base import EmbeddingProvider, Score, Task, TaskMetadata, register_task


@register_task
class ToyParaphraseRetrieval(Task):
    """Each sentence must find its paraphrase among all the paraphrases (accuracy in percent)."""

    metadata = TaskMetadata(
        name="toy-paraphrases",
        type="Retrieval",
        description="Find each sentence's paraphrase among five.",
        datasets=(),
        languages=("en", "de"),
        splits=("test",),
        main_score="accuracy",
    )
    pairs = {
        "en": [("A man plays a guitar.", "Someone is playing the guitar."),
               ("The cat sleeps.", "A cat is asleep."), ("It is raining.", "Rain is falling."),
               ("She reads a book.", "A woman is reading."), ("The bus is late.", "The bus has not come yet.")],
        "de": [("Ein Mann spielt Gitarre.", "Jemand spielt Gitarre."), ("Die Katze schläft.", "Eine Katze schläft."),
               ("Es regnet.", "Regen fällt."), ("Sie liest ein Buch.", "Eine Frau liest."),
               ("Der Bus ist spät.", "Der Bus ist noch nicht da.")],
    }

    def evaluate(self, context: EmbeddingProvider) -> list[Score]:
        scores = []
        for language in self.languages:
            queries = context.embed([query for query, _ in self.pairs[language]], language)
            targets = context.embed([target for _, target in self.pairs[language]], language)
            found = (queries @ targets.T).argmax(axis=1) == np.arange(len(queries))
            scores.append(self.score(language, "accuracy", float(found.mean() * 100), n=len(queries)))
        return scores
