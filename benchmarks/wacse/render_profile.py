"""The WACSE step profile's docs section, from the stored profile.json of `benchmarks.wacse.run_profile` only."""

from __future__ import annotations

from benchmarks.common.docs_sections import missing_tables, publish
from benchmarks.common.results import DOCS, load_json
from benchmarks.wacse.spec import OUT, PROFILE_COMMAND, PROFILE_END, PROFILE_START


def render() -> None:
    """The step profile's section from profile.json; left alone where the docs show it and none is here."""
    saved = load_json(OUT / "profile.json")
    command = PROFILE_COMMAND
    if saved is None:
        if missing_tables(DOCS, PROFILE_START, PROFILE_END, {"wacse profile": command}, set()):
            print("no saved profile here: the docs section is left alone")
        return
    step = saved["seconds_per_step"]
    full = step["tr+awp+wtr"]
    awp = full - step["tr+wtr"]
    lines = [PROFILE_START, "#### Where a WACSE step's time goes", "",
             f"`{command} --batches {saved['batches']} --batch-size {saved['batch_size']}` ({saved['machine']}): "
             f"the default recipe's training pairs ({saved['links_per_pair']} eflomal links per pair kept), "
             "forward and backward of the loss per batch, mean over the batches; AWP's part is the difference "
             "between all three objectives (AWP over every link, each in its own copy) and TR + WTR. Per step AWP "
             "with `awp_links: all` encodes "
             f"{saved['per_step']['awp copies']:.0f} masked copies and predicts "
             f"{saved['per_step']['awp predicted tokens']:.0f} tokens (both directions).", "",
             "| part | seconds per step | share of a full step |", "|---|---|---|"]
    total = full + step["optimizer step"]
    rows = [("TR (forward + backward)", step["tr"]), ("TR + WTR", step["tr+wtr"]),
            ("TR + AWP + WTR, `awp_links: all` (one masked copy per link)", full),
            ("AWP with `awp_links: all` (the difference)", awp),
            ("TR + AWP + WTR, `awp_links: together` (one masked copy per sentence)",
             step["tr+awp+wtr, awp_links together"]),
            ("TR + AWP + WTR, `awp_links: one`", step["tr+awp+wtr, awp_links one"]),
            (f"AWP's softmax over all {saved['vocabulary']:,} tokens (head, logits, cross-entropy; fwd + bwd)",
             step["awp vocabulary softmax"]),
            (f"the same over the bitext's {saved['bitext_tokens']:,} tokens only (not the paper's loss)",
             step["awp restricted softmax"]),
            ("AdamW step (student + head)", step["optimizer step"])]
    lines += [f"| {name} | {value:.2f} | {100 * value / total:.0f} % |" for name, value in rows]
    lines += ["", PROFILE_END]
    publish(DOCS, PROFILE_START, PROFILE_END, lines)
