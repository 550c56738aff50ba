"""Where a WACSE training step's time goes (issue 35): results -> results/bench/wacse/profile.json, docs.

  python -m benchmarks.wacse.run_profile run [--batches 5] [--batch-size 32]   # the default recipe's batches
  python -m benchmarks.wacse.run_profile render

The default recipe (`WacseConfig`: eflomal links, all three objectives) is built as `polyembed train wacse`
builds it, and the same batches of its training pairs go through the loss forward and backward with each set
of objectives: TR alone, TR + WTR, all three (AWP with each `awp_links`: all, each link in its own masked copy,
is the one AWP's share is measured with). Apart, on the
same batches: AWP's prediction over the vocabulary alone (the head and the softmax over all of the student's
tokens, forward and backward, from the masked positions' states), the same over only the tokens of the run's own
bitext (a restricted softmax, timed for comparison; it is not the paper's loss), and one AdamW step over the
student and the head. Torch's own thread count (as training runs), nothing else running.
"""

from __future__ import annotations

import os
import platform
import time

from benchmarks.common.results import write_json
from benchmarks.common.script_cli import script_parser
from benchmarks.wacse.render_profile import render
from benchmarks.wacse.spec import OUT

os.environ.setdefault("HF_HUB_OFFLINE", "1")
LOSSES = {"tr": ((1.0, 0.0, 0.0), "all"), "tr+wtr": ((0.8, 0.0, 0.1), "all"), "tr+awp+wtr": ((0.8, 0.1, 0.1), "all"),
          "tr+awp+wtr, awp_links together": ((0.8, 0.1, 0.1), "together"),
          "tr+awp+wtr, awp_links one": ((0.8, 0.1, 0.1), "one")}
"""Objective weights (TR, AWP, WTR) and AWP's links of each timed loss."""


def run(batches: int, batch_size: int, seed: int) -> None:
    import torch

    from polyembed.methods.wacse.config import WacseConfig
    from polyembed.methods.wacse.losses import WordAlignedTranslationLoss
    from polyembed.methods.wacse.train import build_job, prepare_data

    torch.manual_seed(seed)
    config = WacseConfig(seed=seed, batch_size=batch_size)
    job = build_job(config, prepare_data(config), None, show_progress=True)  # type: ignore[arg-type]
    model, data, prompt = job.model, job.train_dataset, job.prompts or ""
    vocabulary = model[0].auto_model.get_input_embeddings().weight
    seen = sorted({token for column in ("english", "other") for text in data[column]
                   for token in model.tokenizer(prompt + text)["input_ids"]})
    order = torch.randperm(len(data)).tolist()
    timings: dict[str, list[float]] = {name: [] for name in [*LOSSES, "awp vocabulary softmax",
                                                              "awp restricted softmax", "optimizer step"]}
    counts: dict[str, list[int]] = {"awp copies": [], "awp predicted tokens": []}
    losses = {name: WordAlignedTranslationLoss(model, *weights, config.scale, wtr_scale=config.wtr_scale,
                                               awp_links=links) for name, (weights, links) in LOSSES.items()}
    head = losses["tr+awp+wtr"].head
    assert head is not None
    optimizer = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=config.learning_rate)
    for number in range(batches + 1):  # the first batch warms up and is not counted
        rows = order[number * batch_size:(number + 1) * batch_size]
        chunk = data[rows]
        features = [model.preprocess([prompt + text for text in chunk[column]]) for column in ("english", "other")]
        labels = torch.tensor(chunk["label"])
        for name, loss in losses.items():
            model.zero_grad(set_to_none=True)
            started = time.perf_counter()
            loss([dict(side) for side in features], labels).backward()
            if number:
                timings[name].append(time.perf_counter() - started)
        english, other = features
        for side, spans, partner, partner_spans, links in ((english, labels[:, 0], other, labels[:, 1], labels[:, 2]),
                                                           (other, labels[:, 1], english, labels[:, 0],
                                                            labels[:, 2].flip(-1))):
            copies = losses["tr+awp+wtr"].masked_copies(side, spans, partner, partner_spans, links)
            if copies is None or not copies.positions:
                continue
            states = torch.randn(len(copies.positions), vocabulary.shape[1], requires_grad=True)
            targets = torch.tensor(copies.targets)
            for key, table, wanted in (("awp vocabulary softmax", vocabulary, targets),
                                       ("awp restricted softmax", None, None)):
                started = time.perf_counter()
                if table is None:  # the bitext's own tokens only: the targets re-indexed into that list
                    index = torch.tensor(seen)
                    table, wanted = vocabulary[index], torch.searchsorted(index, targets)
                    logits = torch.nn.functional.linear(head.layer_norm(torch.nn.functional.gelu(
                        head.dense(states))), table, head.bias[index])
                else:
                    logits = head(states, table)
                torch.nn.functional.cross_entropy(logits, wanted).backward()
                if number:
                    timings[key].append(time.perf_counter() - started)
            if number:
                counts["awp copies"].append(copies.links)
                counts["awp predicted tokens"].append(len(copies.positions))
        started = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if number:
            timings["optimizer step"].append(time.perf_counter() - started)
        print(f"batch {number} of {batches} timed", flush=True)
    # the two softmax timings are per direction: a step has two
    result = {name: round(sum(values) / len(values) * (2 if "softmax" in name else 1), 3)
              for name, values in timings.items()}
    write_json(OUT / "profile.json", {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        "batches": batches, "batch_size": batch_size, "seed": seed, "seconds_per_step": result,
        "per_step": {name: round(sum(values) * 2 / len(values), 1) for name, values in counts.items()},
        "vocabulary": int(vocabulary.shape[0]), "bitext_tokens": len(seen),
        "links_per_pair": round(float(job.details["links_per_pair"]), 2)})
    render()


def main() -> None:
    parser, commands = script_parser(__doc__)
    one = commands.add_parser("run")
    one.add_argument("--batches", type=int, default=5)
    one.add_argument("--batch-size", type=int, default=32)
    one.add_argument("--seed", type=int, default=0)
    commands.add_parser("render")
    args = parser.parse_args()
    if args.command == "run":
        run(args.batches, args.batch_size, args.seed)
    else:
        render()


if __name__ == "__main__":
    main()
