"""Every CLI command against a table of bad paths and values: exit code 2, exactly one `error:` line, no
traceback, and nothing written anywhere (the working folder is the test folder, so default outputs such as
runs/ or results/ would show up too). Commands that join the CLI (mine, serve, align, new methods) add rows.

Each row is (id, command line, text the error line must contain). `{tmp}` in the command line is the
test folder, laid out by `workspace`; `{ro}` is a folder nobody can write in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from polyembed.cli import app
from polyembed.config import dump_config
from polyembed.methods.distill.config import DistillConfig
from polyembed.streaming import StreamOptions, encode_to_shards
from tests.conftest import HashingEncoder

BITEXT = "".join(f"sentence number {i}\tSatz Nummer {i}\n" for i in range(30))
DISTILL = ["train", "distill", "--config", "{tmp}/base.yaml"]

MINE_GOOD = ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--source-embeddings", "{tmp}/good.npy",
             "--target-embeddings", "{tmp}/good.npy"]
"""A mine command whose inputs are fine (two lines, 4-dimensional rows): the rows below add the bad option."""

CASES: list[tuple[str, list[str], str]] = [
    # ---- eval
    ("eval-out-is-a-file", ["eval", "--tasks", "sts17", "--out", "{tmp}/afile"], "exists and is a file"),
    ("eval-out-below-a-file", ["eval", "--tasks", "sts17", "--out", "{tmp}/afile/report"], "which is a file"),
    ("eval-out-read-only", ["eval", "--tasks", "sts17", "--out", "{ro}/report"], "cannot write in"),
    ("eval-batch-size-0", ["eval", "--tasks", "sts17", "--batch-size", "0", "--out", "{tmp}/r"], "--batch-size"),
    ("eval-batch-size-negative", ["eval", "--tasks", "sts17", "--batch-size", "-3", "--out", "{tmp}/r"],
     "'--batch-size': Input should be greater than or equal to 1"),
    ("eval-batch-size-text", ["eval", "--tasks", "sts17", "--batch-size", "many", "--out", "{tmp}/r"],
     "'--batch-size': Input should be a valid integer"),
    ("eval-unknown-task", ["eval", "--tasks", "nope", "--out", "{tmp}/r"], "unknown task 'nope'"),
    ("eval-tasks-repeated-flag", ["eval", "--tasks", "nope", "--tasks", "sts17", "--out", "{tmp}/r"],
     "unknown task 'nope'"),
    ("eval-unknown-suite", ["eval", "--suite", "nope", "--out", "{tmp}/r"], "unknown suite 'nope'"),
    ("eval-precision-unknown", ["eval", "--tasks", "sts17", "--precision", "fp8", "--out", "{tmp}/r"],
     "'--precision': Value error, 'fp8' is not one of 'fp32', 'bf16', 'fp16', 'auto'"),
    ("eval-precision-upper-case", ["eval", "--tasks", "sts17", "--precision", "BF16", "-o", "{tmp}/r"],
     "'--precision': Value error, 'BF16' is not one of 'fp32', 'bf16', 'fp16', 'auto'"),
    ("eval-precision-without-value", ["eval", "--tasks", "sts17", "-o", "{tmp}/r", "--precision"],
     "Option '--precision' requires an argument"),
    ("eval-data-root-missing", ["eval", "--tasks", "sts17", "--data-root", "{tmp}/nowhere", "--out", "{tmp}/r"],
     "not a directory"),
    ("eval-data-root-is-a-file", ["eval", "--tasks", "sts17", "--data-root", "{tmp}/afile", "--out", "{tmp}/r"],
     "not a directory"),
    ("eval-dataset-missing", ["eval", "--tasks", "sts17", "--data-root", "{tmp}/emptyroot", "--out", "{tmp}/r"],
     "sts2017"),
    ("eval-unknown-language", ["eval", "--tasks", "tatoeba", "--languages", "xxx", "--out", "{tmp}/r"], "xxx"),
    ("eval-mafand-unknown-split", ["eval", "--tasks", "mafand-retrieval", "--task-arg", "split=train", "--out",
                                   "{tmp}/r"], "task mafand-retrieval has no split 'train' (has dev, test)"),
    ("eval-task-arg-without-value", ["eval", "--tasks", "tatoeba", "--task-arg", "novalue", "--out", "{tmp}/r"],
     "KEY=VALUE"),
    ("eval-task-arg-unknown", ["eval", "--tasks", "tatoeba", "--task-arg", "foo=1", "--out", "{tmp}/r"], "foo"),
    ("eval-model-folder-missing", ["eval", "-m", "{tmp}/no-model", "--tasks", "sts17", "--out", "{tmp}/r"],
     "does not exist"),
    ("eval-baseline-folder-missing", ["eval", "-m", "minilm-en", "--baseline", "{tmp}/no-model", "--tasks", "sts17",
                                      "-o", "{tmp}/r"], "--baseline"),
    ("eval-baseline-without-value", ["eval", "--tasks", "sts17", "-o", "{tmp}/r", "--baseline"], "--baseline"),
    ("eval-model-is-a-file", ["eval", "-m", "{tmp}/afile", "--tasks", "sts17", "--out", "{tmp}/r"], "is a file"),
    ("eval-unknown-flag", ["eval", "--bogus"], "--bogus"),
    # ---- encode
    ("encode-output-is-a-folder", ["encode", "{tmp}/good.txt", "-o", "{tmp}/afolder"], "is a folder"),
    ("encode-output-below-a-file", ["encode", "{tmp}/good.txt", "-o", "{tmp}/afile/v.npy"], "which is a file"),
    ("encode-output-read-only", ["encode", "{tmp}/good.txt", "-o", "{ro}/v.npy"], "cannot write in"),
    ("encode-batch-size-0", ["encode", "{tmp}/good.txt", "-o", "{tmp}/v.npy", "--batch-size", "0"], "--batch-size"),
    ("encode-unknown-language", ["encode", "{tmp}/good.txt", "-o", "{tmp}/v.npy", "--language", "xx"],
     "unknown language code 'xx'"),
    ("encode-empty-file", ["encode", "{tmp}/empty.txt", "-o", "{tmp}/v.npy"], "empty"),
    ("encode-input-missing", ["encode", "{tmp}/missing.txt", "-o", "{tmp}/v.npy"], "missing.txt: file not found"),
    ("encode-input-is-a-folder", ["encode", "{tmp}/afolder", "-o", "{tmp}/v.npy"], "is a folder"),
    ("encode-input-not-utf8", ["encode", "{tmp}/latin1.txt", "-o", "{tmp}/v.npy"], "latin1.txt:2: not valid UTF-8"),
    ("encode-input-blank-line", ["encode", "{tmp}/blank-line.txt", "-o", "{tmp}/v.npy"], "blank-line.txt:2"),
    ("encode-model-missing", ["encode", "{tmp}/good.txt", "-o", "{tmp}/v.npy", "-m", "{tmp}/no-model"],
     "does not exist"),
    ("encode-output-missing", ["encode", "{tmp}/good.txt"], "--output"),
    ("encode-prompt-name-unknown", ["encode", "{tmp}/good.txt", "-o", "{tmp}/v.npy", "--language", "en",
                                    "--prompt-name", "question"],
     "--prompt-name question: not a prompt of me5-small (its prompts are"),
    ("eval-prompt-name-unknown", ["eval", "--tasks", "sts17", "--out", "{tmp}/r", "-m", "minilm-en",
                                  "--prompt-name", "passage"], "--prompt-name passage: not a prompt of minilm-en"),
    ("encode-device-unknown", ["encode", "{tmp}/good.txt", "-o", "{tmp}/v.npy", "--device", "tpu"],
     "--device tpu: expected cpu, cuda, cuda:N or mps"),
    ("eval-device-unknown", ["eval", "--tasks", "sts17", "--out", "{tmp}/r", "--device", "gpu"],
     "--device gpu: expected cpu, cuda, cuda:N or mps"),
    ("mine-device-unknown", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--device", "cuda0"],
     "--device cuda0: expected"),
    ("serve-prompt-name-unknown", ["serve", "-m", "minilm-en", "--prompt-name", "passage"],
     "--prompt-name passage: not a prompt of minilm-en"),
    ("serve-device-unknown", ["serve", "--device", "xpu:1"], "--device xpu:1: expected"),
    ("align-device-unknown", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--device", "metal"],
     "--device metal: expected"),
    ("demo-device-unknown", ["demo", "--out", "{tmp}/d", "--device", "npu"], "--device npu: expected"),
    ("prune-device-unknown", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/m", "--device", "tpu"],
     "--device tpu: expected"),
    ("tv-device-unknown", ["models", "transfer-vocabulary", "{tmp}/good.txt", "-o", "{tmp}/m", "--device", "tpu"],
     "--device tpu: expected"),
    ("translate-device-unknown", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/t.tsv", "-m", "{tmp}/afolder",
                                  "--device", "tpu"], "--device tpu: expected"),
    # ---- models
    ("prune-out-not-empty", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/afolder"], "not empty"),
    ("prune-overwrite-refuses-non-model", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/afolder",
                                           "--overwrite"], "no model"),
    ("prune-out-is-a-file", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/afile"], "exists and is a file"),
    ("prune-out-below-a-file", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/afile/m"], "which is a file"),
    ("prune-out-read-only", ["models", "prune", "{tmp}/good.txt", "-o", "{ro}/m"], "cannot write in"),
    ("prune-corpus-missing", ["models", "prune", "{tmp}/missing.txt", "-o", "{tmp}/m"], "file not found"),
    ("prune-corpus-empty", ["models", "prune", "{tmp}/empty.txt", "-o", "{tmp}/m"], "no text"),
    ("prune-corpus-not-utf8", ["models", "prune", "{tmp}/latin1.txt", "-o", "{tmp}/m"], "latin1.txt:2"),
    # ---- models transfer-vocabulary
    ("tv-out-not-empty", ["models", "transfer-vocabulary", "{tmp}/good.txt", "-o", "{tmp}/afolder"], "not empty"),
    ("tv-out-read-only", ["models", "transfer-vocabulary", "{tmp}/good.txt", "-o", "{ro}/m"], "cannot write in"),
    ("tv-corpus-missing", ["models", "transfer-vocabulary", "{tmp}/missing.txt", "-o", "{tmp}/m"], "file not found"),
    ("tv-corpus-empty", ["models", "transfer-vocabulary", "{tmp}/empty.txt", "-o", "{tmp}/m"], "no text"),
    ("tv-corpus-not-utf8", ["models", "transfer-vocabulary", "{tmp}/latin1.txt", "-o", "{tmp}/m"], "latin1.txt:2"),
    ("tv-unknown-language", ["models", "transfer-vocabulary", "xq1={tmp}/good.txt", "-o", "{tmp}/m"],
     "unknown language code 'xq1'"),
    ("tv-language-without-file", ["models", "transfer-vocabulary", "de=", "-o", "{tmp}/m"], "expected FILE or"),
    ("tv-per-language-needs-lang", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--per-language", "-o",
                                    "{tmp}/m"], "needs LANG=FILE"),
    ("tv-unknown-space", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocabulary-auxiliary", "glove", "-o",
                          "{tmp}/m"],
     "'--vocabulary-auxiliary': Value error, 'glove' is not one of 'ppmi-svd', 'fasttext'"),
    ("tv-unknown-unseen", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocabulary-unseen", "zero", "-o",
                           "{tmp}/m"],
     "'--vocabulary-unseen': Value error, 'zero' is not one of 'random', 'decompose'"),
    ("tv-vocabulary-size-0", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocabulary-size", "0", "-o",
                              "{tmp}/m"], "'--vocabulary-size': Input should be greater than or equal to 1"),
    ("tv-vocabulary-size-text", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocabulary-size", "16k", "-o",
                                 "{tmp}/m"], "'--vocabulary-size': Input should be a valid integer"),
    ("tv-vocab-size-too-small", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocabulary-size", "3", "-m",
                                 "minilm-en", "-o", "{tmp}/m"], "larger than the 5 special tokens"),
    # ---- old flag names (RENAMED_FLAGS): read as the new ones, so a bad value is refused under the new name
    ("tv-old-vocab-size-0", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocab-size", "0", "-o",
                             "{tmp}/m"], "'--vocabulary-size': Input should be greater than or equal to 1"),
    ("tv-old-vocab-size-equals-text", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--vocab-size=many", "-o",
                                       "{tmp}/m"], "'--vocabulary-size': Input should be a valid integer"),
    ("tv-old-auxiliary-unknown", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--auxiliary", "glove", "-o",
                                  "{tmp}/m"], "'--vocabulary-auxiliary': Value error, 'glove' is not one of"),
    ("tv-old-unseen-unknown", ["models", "transfer-vocabulary", "{tmp}/good.txt", "--unseen", "zero", "-o",
                               "{tmp}/m"], "'--vocabulary-unseen': Value error, 'zero' is not one of"),
    ("align-old-method-unknown", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--method", "best"],
     "'--aligner': Value error, 'best' is not one of 'argmax', 'itermax', 'match', 'eflomal'"),
    ("align-old-layer-negative", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--layer", "-1"],
     "'--aligner-layer': Input should be greater than or equal to 0"),
    ("align-old-threshold-above-1", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--threshold", "2"],
     "'--alignment-threshold': Input should be less than or equal to 1"),
    ("modular-pipeline-old-base-without-value", ["train", "modular", "pipeline", "--base"],
     "Option '--student' requires an argument"),
    ("modular-pipeline-config-base-and-student", ["train", "modular", "pipeline", "--config",
                                                  "{tmp}/base-and-student.yaml"],
     "base-and-student.yaml:2: base: the old name of student, which is given too: keep student only"),
    ("mine-old-name-of-align-is-not-renamed", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                                "--method", "itermax"], "No such option: --method"),
    ("tv-model-missing", ["models", "transfer-vocabulary", "{tmp}/good.txt", "-m", "{tmp}/no-model", "-o", "{tmp}/m"],
     "no-model"),
    ("prune-model-missing", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/m", "-m", "{tmp}/no-model"],
     "does not exist"),
    ("prepare-unknown-model", ["models", "prepare", "nope"], "unknown built-in model 'nope'"),
    # ---- align
    ("align-file-missing", ["align", "{tmp}/nothing.txt", "-o", "{tmp}/a.txt"], "nothing.txt"),
    ("align-no-separator", ["align", "{tmp}/good.txt", "-o", "{tmp}/a.txt"],
     "good.txt:1: expected 'source tokens ||| target tokens'"),
    ("align-unequal-files", ["align", "{tmp}/good.txt", "{tmp}/one-line.txt", "-o", "{tmp}/a.txt"],
     "good.txt:2: 2 source lines but 1 target lines"),
    ("align-bad-method", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--aligner", "best", "-m", "minilm-en"],
     "'--aligner': Value error, 'best' is not one of 'argmax', 'itermax', 'match', 'eflomal'"),
    ("align-bad-threshold", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--alignment-threshold", "2"],
     "--alignment-threshold"),
    ("align-alignment-threshold-nan", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--alignment-threshold",
                                       "nan"], "--alignment-threshold"),
    ("align-aligner-layer-negative", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--aligner-layer", "-1"],
     "'--aligner-layer': Input should be greater than or equal to 0"),
    ("align-symmetrization-unknown", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/a.txt", "--aligner", "eflomal",
                                      "--symmetrization", "both"], "'--symmetrization': Value error, 'both' is not"),
    # ---- data
    ("data-list-root-missing", ["data", "list", "--data-root", "{tmp}/nowhere"], "not a directory"),
    ("data-list-root-is-a-file", ["data", "list", "--data-root", "{tmp}/afile"], "not a directory"),
    ("translate-input-missing", ["data", "translate", "{tmp}/none.txt", "-o", "{tmp}/t.tsv", "-m", "{tmp}/afolder"],
     "none.txt: no such file"),
    ("translate-output-folder-missing", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/nowhere/t.tsv", "-m",
                                         "{tmp}/afolder"], "folder"),
    ("translate-not-a-model", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/t.tsv", "-m", "{tmp}/afolder"],
     "cannot load a seq2seq model"),
    # ---- train distill: numbers (flags)
    ("distill-max-steps-negative", [*DISTILL, "--max-steps", "-5"], "--max-steps: -5 is out of range"),
    ("distill-max-steps-0", [*DISTILL, "--max-steps", "0"], "--max-steps: 0 is out of range"),
    ("distill-epochs-negative", [*DISTILL, "--epochs", "-1"], "--epochs: -1.0 is out of range"),
    ("distill-epochs-0", [*DISTILL, "--epochs", "0"], "--epochs: 0.0 is out of range"),
    ("distill-batch-size-0", [*DISTILL, "--batch-size", "0"], "--batch-size: 0 is out of range"),
    ("distill-learning-rate-negative", [*DISTILL, "--learning-rate", "-1"], "--learning-rate: -1.0 is out of range"),
    ("distill-eval-steps-negative", [*DISTILL, "--eval-steps", "-3"], "--eval-steps: -3 is out of range"),
    ("distill-warmup-ratio-1", [*DISTILL, "--warmup-ratio", "1"], "--warmup-ratio: 1.0 is out of range"),
    ("distill-weight-decay-negative", [*DISTILL, "--weight-decay", "-0.1"], "--weight-decay"),
    ("distill-dropout-1.5", [*DISTILL, "--dropout", "1.5"], "--dropout: 1.5 is out of range"),
    ("distill-seed-negative", [*DISTILL, "--seed", "-1"], "--seed: -1 is out of range"),
    ("distill-save-total-limit-0", [*DISTILL, "--save-total-limit", "0"], "--save-total-limit"),
    ("distill-teacher-batch-size-0", [*DISTILL, "--teacher-batch-size", "0"], "--teacher-batch-size"),
    ("distill-teacher-weight-above-1", [*DISTILL, "--teacher-weight", "1.5"], "--teacher-weight"),
    ("distill-max-seq-length-0", [*DISTILL, "--max-seq-length", "0"], "--max-seq-length"),
    ("distill-inference-max-seq-length-0", [*DISTILL, "--inference-max-seq-length", "0"],
     "--inference-max-seq-length"),
    ("distill-adapter-unknown", [*DISTILL, "--adapter", "qlora"], "--adapter"),
    ("distill-lora-rank-0", [*DISTILL, "--adapter", "lora", "--lora-rank", "0"], "--lora-rank"),
    ("distill-report-to-unknown", [*DISTILL, "--report-to", "wandb"], "--report-to"),
    ("distill-dev-pairs-0", [*DISTILL, "--dev-pairs-per-source", "0"], "--dev-pairs-per-source"),
    ("distill-max-pairs-negative", [*DISTILL, "--max-pairs-per-source", "-5"], "--max-pairs-per-source"),
    ("distill-freeze-layers-negative", [*DISTILL, "--freeze-layers", "-1"], "--freeze-layers"),
    ("distill-vocabulary-size-0", [*DISTILL, "--vocabulary-size", "0"], "--vocabulary-size"),
    ("distill-learning-rate-nan", [*DISTILL, "--learning-rate", "nan"], "--learning-rate: nan is out of range"),
    ("distill-steps-text", [*DISTILL, "--max-steps", "ten"], "'--max-steps': Input should be a valid integer"),
    # ---- train distill: choices and codes
    ("distill-precision-unknown", [*DISTILL, "--precision", "fp16"], "--precision: expected one of auto, bf16"),
    ("distill-best-metric-unknown", [*DISTILL, "--best-metric", "loss"], "--best-metric: expected one of"),
    ("distill-projection-unknown", [*DISTILL, "--projection", "sometimes"], "--projection: expected one of"),
    ("distill-vocabulary-unknown", [*DISTILL, "--student-vocabulary", "new"], "--student-vocabulary"),
    ("distill-unseen-unknown", [*DISTILL, "--vocabulary-unseen", "zero"], "--vocabulary-unseen"),
    ("distill-made-up-language", [*DISTILL, "--languages", "xq1", "--parallel-files", "xq1={tmp}/pairs.tsv"],
     "xq1"),
    ("distill-unknown-dataset", [*DISTILL, "--datasets", "nope"], "nope"),
    ("distill-anchor-is-trained", [*DISTILL, "--anchor-files", "de={tmp}/good.txt"],
     "'de' is also a trained language"),
    ("distill-anchor-made-up", [*DISTILL, "--anchor-languages", "xq1"], "unknown language 'xq1'"),
    ("distill-anchor-file-missing", [*DISTILL, "--anchor-files", "fr={tmp}/missing.txt"], "missing.txt"),
    ("distill-anchor-file-empty", [*DISTILL, "--anchor-files", "fr={tmp}/empty.txt"], "no sentences"),
    ("distill-anchor-file-not-utf8", [*DISTILL, "--anchor-files", "fr={tmp}/latin1.txt"], "latin1.txt:2"),
    ("distill-anchor-cap-0", [*DISTILL, "--anchor-sentences-per-language", "0"], "out of range"),
    # ---- train distill: bitext
    ("distill-bitext-is-a-folder", [*DISTILL, "--parallel-files", "de={tmp}/afolder"], "afolder: is a folder"),
    ("distill-bitext-missing", [*DISTILL, "--parallel-files", "de={tmp}/missing.tsv"], "missing.tsv: file not found"),
    ("distill-bitext-spec-without-files", [*DISTILL, "--parallel-files", "de"], "expected LANG=FILE.tsv"),
    ("distill-bitext-unequal-lines", [*DISTILL, "--parallel-files", "de={tmp}/three.en,{tmp}/two.de"],
     "three.en:3"),
    ("distill-bitext-empty-side", [*DISTILL, "--parallel-files", "de={tmp}/empty-side.tsv"], "empty-side.tsv:2"),
    ("distill-bitext-not-utf8", [*DISTILL, "--parallel-files", "de={tmp}/latin1.txt,{tmp}/good.txt"],
     "latin1.txt:2"),
    # ---- train distill: config files
    ("distill-config-not-utf8", ["train", "distill", "--config", "{tmp}/latin1.yaml"], "latin1.yaml:2"),
    ("distill-config-control-character", ["train", "distill", "--config", "{tmp}/control.yaml"],
     "control.yaml:2: invalid YAML"),
    ("distill-config-invalid-yaml", ["train", "distill", "--config", "{tmp}/broken.yaml"], "broken.yaml:2"),
    ("distill-config-missing", ["train", "distill", "--config", "{tmp}/missing.yaml"], "missing.yaml: file not found"),
    ("distill-config-is-a-folder", ["train", "distill", "--config", "{tmp}/afolder"], "is a folder"),
    ("distill-config-unknown-key", ["train", "distill", "--config", "{tmp}/unknown-key.yaml"],
     "unknown-key.yaml:2: batchsize: unknown option"),
    ("distill-config-out-of-range", ["train", "distill", "--config", "{tmp}/negative-steps.yaml"],
     "negative-steps.yaml:3: max_steps: -5 is out of range"),
    ("distill-config-wrong-type", ["train", "distill", "--config", "{tmp}/wrong-type.yaml"],
     "wrong-type.yaml:2: epochs: expected float"),
    ("distill-config-keep-checkpoints-not-bool", ["train", "distill", "--config", "{tmp}/keep-checkpoints.yaml"],
     "keep-checkpoints.yaml:2: keep_checkpoints"),
    ("distill-config-not-a-mapping", ["train", "distill", "--config", "{tmp}/list.yaml"], "must be a mapping"),
    ("distill-config-bad-date", ["train", "distill", "--config", "{tmp}/bad-date.yaml"], "invalid YAML"),
    # ---- train distill: output folder and models
    ("distill-output-is-a-file", [*DISTILL, "--output-dir", "{tmp}/afile"], "exists and is a file"),
    ("distill-output-below-a-file", [*DISTILL, "--output-dir", "{tmp}/afile/run"], "which is a file"),
    ("distill-output-read-only", [*DISTILL, "--output-dir", "{ro}/run"], "cannot write in"),
    ("distill-output-not-empty", [*DISTILL, "--output-dir", "{tmp}/afolder"], "not empty"),
    ("distill-overwrite-refuses-non-run", [*DISTILL, "--output-dir", "{tmp}/afolder", "--overwrite"],
     "not a polyembed run folder"),
    ("distill-resume-other-options", [*DISTILL, "--output-dir", "{tmp}/old-run", "--resume", "--max-steps", "7"],
     "max_steps: 3 in the run, 7 now"),
    ("distill-teacher-missing", [*DISTILL, "--teacher", "{tmp}/no-model"], "does not exist"),
    ("distill-teacher-is-a-file", [*DISTILL, "--teacher", "{tmp}/afile"], "is a file"),
    ("distill-teacher-not-a-model", [*DISTILL, "--teacher", "{tmp}/afolder"], "not a model folder"),
    ("distill-student-not-cached", [*DISTILL, "--student", "someone/not-cached-model"], "not in the local"),
    ("distill-student-invalid-id", [*DISTILL, "--student", "bad id!!"], "valid Hugging Face id"),
    ("distill-unknown-flag", [*DISTILL, "--bogus", "1"], "--bogus"),
    # ---- encode into shards
    ("encode-shards-output-is-a-file", ["encode", "{tmp}/good.txt", "-o", "{tmp}/afile", "--shard-size", "10"],
     "exists and is a file"),
    ("encode-shards-bad-dtype", ["encode", "{tmp}/good.txt", "-o", "{tmp}/s", "--shard-size", "10", "--dtype", "int8"],
     "--dtype"),
    ("encode-shards-column-alone", ["encode", "{tmp}/good.txt", "-o", "{tmp}/s", "--shard-size", "10",
                                    "--language-column", "1"], "go together"),
    ("encode-shards-stdin-workers", ["encode", "-", "-o", "{tmp}/s", "--shard-size", "10", "--workers", "2"],
     "not stdin"),
    ("encode-shards-bad-backend", ["encode", "{tmp}/good.txt", "-o", "{tmp}/s", "--shard-size", "10", "--backend",
                                   "spark"], "--backend"),
    ("encode-column-without-shards", ["encode", "{tmp}/good.txt", "-o", "{tmp}/v.npy", "--language-column", "1"],
     "--shard-size"),
    ("encode-shards-same-columns", ["encode", "{tmp}/pairs.tsv", "-o", "{tmp}/s", "--shard-size", "10",
                                    "--language-column", "1", "--text-column", "1"], "the columns must differ"),
    ("encode-shards-empty-stdin", ["encode", "-", "-o", "{tmp}/s", "--shard-size", "10"],
     "<stdin>: no lines to encode"),
    ("encode-shards-empty-file", ["encode", "{tmp}/empty.txt", "-o", "{tmp}/s", "--shard-size", "10"],
     "empty.txt: no lines to encode"),
    # ---- an output that is an input (issue 32): the same file, or a link to it
    ("encode-output-is-the-input", ["encode", "{tmp}/good.txt", "-o", "{tmp}/good.txt"],
     "--output {tmp}/good.txt: is also the input"),
    ("encode-output-links-to-the-input", ["encode", "{tmp}/good.txt", "-o", "{tmp}/good-link.txt"],
     "is also the input {tmp}/good.txt"),
    ("mine-output-is-the-target", ["mine", "{tmp}/good.txt", "{tmp}/one-line.txt", "-o", "{tmp}/one-line.txt"],
     "--output {tmp}/one-line.txt: is also the input"),
    ("mine-output-is-the-embeddings", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/good.npy",
                                       "--source-embeddings", "{tmp}/good.npy"], "is also the input {tmp}/good.npy"),
    ("align-output-is-the-input", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/pairs.txt"], "is also the input"),
    ("align-output-links-to-the-target", ["align", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/good-link.txt"],
     "is also the input"),
    ("translate-output-is-the-input", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/good.txt", "-m",
                                       "{tmp}/afolder"], "is also the input"),
    # ---- mine
    ("mine-unknown-margin", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--margin", "cos"],
     "--margin"),
    ("mine-k-0", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--k", "0"], "--k"),
    ("mine-output-is-a-folder", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/afolder"], "is a folder"),
    ("mine-output-read-only", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{ro}/p.tsv"], "cannot write in"),
    ("mine-source-missing", ["mine", "{tmp}/missing.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv"],
     "missing.txt: file not found"),
    ("mine-target-blank-line", ["mine", "{tmp}/good.txt", "{tmp}/blank-line.txt", "-o", "{tmp}/p.tsv"],
     "blank-line.txt:2"),
    ("mine-unknown-language", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                               "--source-language", "xx"], "unknown language code 'xx'"),
    ("mine-embeddings-not-npy", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                 "--source-embeddings", "{tmp}/afile", "--target-embeddings", "{tmp}/afile"],
     "not a .npy"),
    ("mine-embeddings-nan-row", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                 "--source-embeddings", "{tmp}/nan.npy", "--target-embeddings", "{tmp}/good.npy"],
     "nan.npy: row 2 has NaN or infinite values"),
    ("mine-embeddings-zero-rows", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                   "--source-embeddings", "{tmp}/good.npy", "--target-embeddings", "{tmp}/zeros.npy"],
     "zeros.npy: row 1 has all zeros"),
    ("mine-embeddings-beyond-float32", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                        "--source-embeddings", "{tmp}/huge.npy", "--target-embeddings",
                                        "{tmp}/good.npy"], "huge.npy: row 1 has NaN or infinite values"),
    ("mine-threshold-nan", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--threshold", "nan"],
     "--threshold: nan is out of range: expected a finite number"),
    ("mine-embeddings-zero-byte-npy", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                       "--source-embeddings", "{tmp}/empty.npy", "--target-embeddings",
                                       "{tmp}/good.npy"], "empty.npy: not a .npy embedding matrix"),
    ("mine-embeddings-zero-byte-shard", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                         "--source-embeddings", "{tmp}/shards", "--target-embeddings",
                                         "{tmp}/good.npy"], "shards/shard-00000.npy: checksum mismatch"),
    ("mine-embeddings-zero-byte-offsets", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                           "--source-embeddings", "{tmp}/shards-offsets", "--target-embeddings",
                                           "{tmp}/good.npy"], "shards-offsets/shard-00000.offsets.npy: checksum"),
    ("mine-embeddings-other-text", ["mine", "{tmp}/one-line.txt", "{tmp}/one-line.txt", "-o", "{tmp}/p.tsv",
                                    "--source-embeddings", "{tmp}/shards-ok", "--target-embeddings",
                                    "{tmp}/one.npy"], "shards-ok: encoded from other text than"),
    # ---- mine at scale: the index, its search parameters, the search shards, the work folder
    ("mine-index-unknown", [*MINE_GOOD, "--index", "nonsense"],
     "--index nonsense: not one of auto, flat, ivf, ivf-sq8, pq, hnsw nor a faiss factory string"),
    ("mine-index-too-many-cells", [*MINE_GOOD, "--index", "IVF999,Flat"],
     "--index IVF999,Flat: IVF999,Flat has 999 cells, more than the 2 sentences"),
    ("mine-index-pq-of-another-dimension", [*MINE_GOOD, "--index", "PQ3"],
     "--index PQ3: not one of auto, flat, ivf, ivf-sq8, pq, hnsw nor a faiss factory string faiss can build for "
     "4-dimensional rows"),
    ("mine-search-parameters-unknown", [*MINE_GOOD, "--index", "ivf", "--search-parameters", "efSearch=4"],
     "--search-parameters efSearch=4: ParameterSpace::set_index_parameter:could not set parameter efSearch"),
    ("mine-search-parameters-not-a-number", [*MINE_GOOD, "--index", "ivf", "--search-parameters", "nprobe=many"],
     "--search-parameters nprobe=many: could not interpret parameters nprobe=many"),
    ("mine-search-parameters-on-flat", [*MINE_GOOD, "--index", "flat", "--search-parameters", "nprobe=8"],
     "--search-parameters nprobe=8: the exact flat index has no search parameters"),
    ("mine-search-parameters-without-value", [*MINE_GOOD, "--search-parameters"],
     "Option '--search-parameters' requires an argument"),
    ("mine-shard-size-0", [*MINE_GOOD, "--shard-size", "0"], "'--shard-size': Input should be greater than or "
                                                             "equal to 1"),
    ("mine-shard-size-text", [*MINE_GOOD, "--shard-size", "many"], "'--shard-size': Input should be a valid integer"),
    ("mine-embeddings-of-another-dimension", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv",
                                              "--source-embeddings", "{tmp}/shards-ok", "--target-embeddings",
                                              "{tmp}/good.npy"],
     "{tmp}/good.npy: 4-dimensional rows where {tmp}/shards-ok has 8-dimensional ones"),
    ("mine-work-folder-is-a-file", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/blocked.tsv",
                                    "--source-embeddings", "{tmp}/good.npy", "--target-embeddings", "{tmp}/good.npy"],
     "--output's work folder {tmp}/blocked.tsv.work: exists and is a file"),
    # ---- train modular (stages)
    ("modular-la-no-language", ["train", "modular", "la", "--datasets", "", "--text-files", "{tmp}/good.txt"],
     "no language given"),
    ("modular-la-too-little-text", ["train", "modular", "la", "--language", "de", "--datasets", "",
                                    "--text-files", "{tmp}/good.txt"], "language 'de': 2 sentences"),
    ("modular-la-text-file-missing", ["train", "modular", "la", "--language", "de", "--datasets", "",
                                      "--text-files", "{tmp}/missing.txt"], "missing.txt"),
    ("modular-la-word-dataset", ["train", "modular", "la", "--language", "de", "--datasets", "muse-dictionaries"],
     "has no sentences for MLM"),
    ("modular-se-one-column", ["train", "modular", "se", "--language", "de", "--paraphrase-datasets", "",
                               "--paraphrase-files", "{tmp}/good.txt"], "good.txt:1: expected two tab-separated"),
    ("modular-se-unknown-source", ["train", "modular", "se", "--language", "de", "--paraphrase-datasets", "snli"],
     "'snli' is not a paraphrase source"),
    ("modular-se-bad-scale", ["train", "modular", "se", "--language", "de", "--mnrl-scale", "0"], "--mnrl-scale"),
    ("modular-la-bad-adapter", ["train", "modular", "la", "--language", "de", "--adapter", "prefix"], "--adapter"),
    ("modular-cla-english", ["train", "modular", "cla", "--language", "en"], "English is the pivot"),
    ("modular-cla-no-parallel", ["train", "modular", "cla", "--language", "de", "--parallel-datasets", "",
                                 "--paraphrase-datasets", ""], "language 'de': 0 parallel pairs"),
    ("modular-cla-bad-mixing", ["train", "modular", "cla", "--language", "de", "--batch-mixing", "random"],
     "--batch-mixing"),
    ("modular-cla-no-batches", ["train", "modular", "cla", "--language", "de", "--paraphrase-batches", "0",
                                "--parallel-batches", "0"], "both 0: nothing trains"),
    ("modular-cla-negative-batches", ["train", "modular", "cla", "--language", "de", "--parallel-batches", "-1"],
     "--parallel-batches"),
    ("modular-cla-no-sts-dev", ["train", "modular", "cla", "--language", "sw", "--dev-measure", "sts"],
     "language 'sw': no en-sw STS dev split"),
    ("modular-cla-parallel-one-column", ["train", "modular", "cla", "--language", "de", "--parallel-datasets", "",
                                         "--paraphrase-datasets", "", "--parallel-files", "{tmp}/good.txt"],
     "good.txt"),
    ("modular-cla-bad-paraphrase-loss", ["train", "modular", "cla", "--language", "de", "--paraphrase-loss", "mnrl"],
     "--paraphrase-loss"),
    ("modular-cla-bad-parallel-loss", ["train", "modular", "cla", "--language", "de", "--parallel-loss", "mse"],
     "--parallel-loss"),
    ("modular-cla-bad-checkpoint", ["train", "modular", "cla", "--language", "de", "--checkpoint", "last"],
     "--checkpoint"),
    ("modular-cla-bad-lr-schedule", ["train", "modular", "cla", "--language", "de", "--lr-schedule", "cosine"],
     "--lr-schedule"),
    ("modular-pipeline-english", ["train", "modular", "pipeline", "--languages", "en,de"], "English is the pivot"),
    ("modular-pipeline-bad-cla-paraphrase-loss", ["train", "modular", "pipeline", "--languages", "de",
                                                  "--cla-paraphrase-loss", "both"], "--cla-paraphrase-loss"),
    ("modular-pipeline-cla-loss-all-pairs", ["train", "modular", "pipeline", "--languages", "de", "--alignment",
                                             "all-pairs", "--cla-paraphrase-loss", "pivot"], "bilingual CLA only"),
    ("modular-pipeline-cla-options-all-pairs", ["train", "modular", "pipeline", "--languages", "de", "--alignment",
                                                "all-pairs", "--cla-dev-measure", "sts"], "bilingual CLA only"),
    ("modular-pipeline-negative-cla-batches", ["train", "modular", "pipeline", "--languages", "de",
                                               "--cla-parallel-batches", "-1"], "--cla-parallel-batches"),
    ("modular-pipeline-unknown-language", ["train", "modular", "pipeline", "--languages", "xq1"],
     "unknown language 'xq1'"),
    ("modular-pipeline-bad-vocabulary", ["train", "modular", "pipeline", "--vocabulary", "bpe"], "--vocabulary"),
    ("modular-pipeline-no-steps", ["train", "modular", "pipeline", "--la-steps", "0"], "--la-steps"),
    ("new-language-no-bitext", ["train", "new-language"], "--parallel-files"),
    ("new-language-bitext-missing", ["train", "new-language", "--parallel-files", "yo={tmp}/missing.tsv"],
     "missing.tsv: file not found"),
    ("new-language-nc-without-consent", ["train", "new-language", "--parallel-files", "de={tmp}/pairs.tsv",
                                         "--datasets", "mafand-mt"], "pass --allow-noncommercial"),
    ("new-language-unknown-dataset", ["train", "new-language", "--parallel-files", "de={tmp}/pairs.tsv",
                                      "--datasets", "nope"], "nope"),
    ("wacse-unknown-objective", ["train", "wacse", "--objectives", "tr", "--objectives", "mlm"],
     "'mlm' is not an objective"),
    ("wacse-bad-aligner", ["train", "wacse", "--aligner", "giza"], "--aligner"),
    ("wacse-bad-awp-links", ["train", "wacse", "--awp-links", "some"], "--awp-links"),
    ("wacse-batch-of-one", ["train", "wacse", "--batch-size", "1"], "--batch-size"),  # TR needs negatives
    ("wacse-zero-wtr-scale", ["train", "wacse", "--wtr-scale", "0"], "--wtr-scale"),
    ("wacse-negative-head-warmup", ["train", "wacse", "--awp-head-warmup-steps", "-1"], "--awp-head-warmup-steps"),
    ("wacse-head-warmup-without-awp", ["train", "wacse", "--objectives", "tr", "--awp-head-warmup-steps", "5"],
     "warms up the AWP head, but awp is not trained"),
    ("wacse-group-by-length", ["train", "wacse", "--group-by-length"], "length grouping does not apply"),
    ("wacse-aligner-datasets-not-eflomal", ["train", "wacse", "--aligner", "itermax", "--aligner-datasets",
                                            "kardes-xnli"], "--aligner-datasets: only eflomal learns"),
    ("wacse-unknown-aligner-dataset", ["train", "wacse", "--aligner-datasets", "kardes"],
     "--aligner-datasets: 'kardes' is not a training dataset"),
    ("wacse-vocabulary-transfer", ["train", "wacse", "--student-vocabulary", "transfer"],
     "WACSE keeps the student's vocabulary"),
    ("wacse-bad-bitext", ["train", "wacse", "--languages", "", "--datasets", "", "--parallel-files",
                          "de={tmp}/good.txt"], "good.txt:1"),
    ("modular-pipeline-bad-preset", ["train", "modular", "pipeline", "--preset", "tiny"], "--preset"),
    ("modular-pipeline-bad-alignment", ["train", "modular", "pipeline", "--alignment", "pairs"], "--alignment"),
    ("modular-pipeline-skip-la-commas", ["train", "modular", "pipeline", "--languages", "de,kk", "--skip-la",
                                         "de,ru"], "--skip-la: 'ru' is not one of the languages (de, kk) nor 'all'"),
    ("modular-pipeline-skip-la-unlisted", ["train", "modular", "pipeline", "--languages", "de,kk", "--skip-la", "ru"],
     "--skip-la: 'ru' is not one of the languages (de, kk) nor 'all'"),
    ("translate-bad-beams", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/t.tsv", "-m", "{tmp}/afolder",
                             "--num-beams", "0"], "--num-beams"),
    ("modular-se-no-la-result", ["train", "modular", "se", "--language", "kk", "--student", "{tmp}/kk-la/model"],
     "kk-la/model does not exist (run `polyembed train modular la` for 'kk' first)"),
    ("modular-cla-no-tokenizer", ["train", "modular", "cla", "--language", "kk", "--student", "{tmp}/notokenizer"],
     "notokenizer has no tokenizer"),
    ("modular-cla-no-pivot", ["train", "modular", "cla", "--language", "kk", "--pivot", "{tmp}/en-se/model"],
     "en-se/model does not exist (run `polyembed train modular se --language en` for 'en' first)"),
    ("emmax-one-rank", ["train", "emmax", "warmup", "--ranks", "1"], "--ranks: 1 is out of range"),
    ("emmax-bad-classifier", ["train", "emmax", "warmup", "--classifier", "svm"], "--classifier"),
    ("emmax-em-no-student", ["train", "emmax", "em"], "set student to the warm-up's model folder"),
    ("emmax-em-not-warmed-up", ["train", "emmax", "em", "--student", "{tmp}/afolder"], "no emmax_classifier.json"),
    ("emmax-em-empty-text", ["train", "emmax", "em", "--student", "{tmp}/afolder", "--no-parallel", "--text-files",
                             "sw={tmp}/empty.txt"], "empty.txt: no sentences"),
    ("emmax-em-text-with-bitext", ["train", "emmax", "em", "--student", "{tmp}/afolder", "--text-files",
                                   "sw={tmp}/good.txt"], "--text-files: monolingual text needs `parallel: false`"),
    ("emmax-bad-mixup-rule", ["train", "emmax", "warmup", "--mixup-rule", "floor"], "--mixup-rule"),
    ("emmax-em-bad-classifier-rate", ["train", "emmax", "em", "--student", "{tmp}/afolder",
                                      "--classifier-learning-rate", "0"],
     "--classifier-learning-rate: 0.0 is out of range: expected a value > 0"),
    ("emmax-rank-similarity-momentum-1", ["train", "emmax", "warmup", "--rank-similarity-momentum", "1"],
     "--rank-similarity-momentum: 1.0 is out of range: expected a value >= 0 and < 1"),
    ("emmax-bad-stage", ["train", "emmax", "warmup", "--stage", "both"], "--stage"),
    ("emmax-prior-mixup-without-gmm", ["train", "emmax", "warmup", "--classifier", "fcn", "--mixup-rule", "prior"],
     "--mixup-rule: 'prior' bins by the GMM's rank priors"),
    ("emmax-bad-encoder-loss", ["train", "emmax", "warmup", "--encoder-loss", "moco"], "--encoder-loss"),
    ("emmax-bad-classifier-examples", ["train", "emmax", "warmup", "--classifier-examples", "all"],
     "--classifier-examples"),
    ("emmax-mlm-probability-1", ["train", "emmax", "em", "--student", "{tmp}/afolder", "--mlm-probability", "1"],
     "--mlm-probability: 1.0 is out of range: expected a value >= 0 and < 1"),
    ("emmax-classifier-stage-with-mlm", ["train", "emmax", "warmup", "--stage", "classifier", "--mlm-probability",
                                         "0.1"], "--mlm-probability: the classifier stage keeps the encoder frozen"),
    ("modular-single-no-pairs", ["train", "modular", "single", "--languages", "de,sw", "--max-steps", "1"],
     "single model, language 'sw'"),
    ("modular-all-pairs-not-a-model", ["train", "modular", "cla-all-pairs", "--encoders", "de={tmp}/afolder"],
     "language 'de': {tmp}/afolder is not a sentence-transformers folder (run its SE stage first)"),
    ("mine-bad-backend", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--workers", "2",
                          "--backend", "spark"], "--backend"),
    ("mine-workers-with-cache", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/p.tsv", "--workers", "2",
                                 "--cache"], "--cache"),
    # ---- serve
    ("serve-port-0", ["serve", "--port", "0"], "--port"),
    ("serve-max-inputs-0", ["serve", "--max-inputs", "0"], "--max-inputs"),
    ("serve-max-request-tokens-0", ["serve", "--max-request-tokens", "0"], "--max-request-tokens"),
    ("serve-max-body-bytes-0", ["serve", "--max-body-bytes", "0"], "--max-body-bytes"),
    ("serve-max-concurrent-requests-0", ["serve", "--max-concurrent-requests", "0"], "--max-concurrent-requests"),
    ("serve-max-queue-seconds-0", ["serve", "--max-queue-seconds", "0"], "--max-queue-seconds"),
    ("serve-queue-target-seconds-negative", ["serve", "--queue-target-seconds", "-0.1"], "--queue-target-seconds"),
    ("serve-resume-queue-seconds-negative", ["serve", "--resume-queue-seconds", "-1"], "--resume-queue-seconds"),
    ("serve-max-batch-tokens-0", ["serve", "--max-batch-tokens", "0"], "--max-batch-tokens"),
    ("serve-call-overhead-tokens-negative", ["serve", "--call-overhead-tokens", "-1"], "--call-overhead-tokens"),
    ("serve-negative-shutdown-timeout", ["serve", "--shutdown-timeout", "-1"], "--shutdown-timeout"),
    ("serve-access-log-with-a-value", ["serve", "--access-log=no"], "--access-log"),
    ("serve-body-timeout-0", ["serve", "--body-timeout", "0"], "--body-timeout"),
    ("serve-max-header-bytes-too-small", ["serve", "--max-header-bytes", "100"], "--max-header-bytes"),
    ("serve-max-headers-0", ["serve", "--max-headers", "0"], "--max-headers"),
    ("serve-api-key-empty", ["serve", "--api-key", ""], "--api-key: empty"),
    ("serve-api-key-with-a-space", ["serve", "--api-key", "my key"], "--api-key: has ' '"),
    ("serve-api-key-not-ascii", ["serve", "--api-key", "clé"], "--api-key: has 'é'"),
    ("serve-served-model-name-empty", ["serve", "--served-model-name", ""], "--served-model-name: empty"),
    ("serve-model-missing", ["serve", "-m", "{tmp}/nowhere"], "nowhere"),
    ("serve-backend-unknown", ["serve", "--backend", "tensorrt"], "--backend"),
    ("serve-backend-torch-on-an-export", ["serve", "-m", "{tmp}/onnx-export", "--backend", "torch"],
     "is an ONNX export"),
    ("serve-backend-int8-missing", ["serve", "-m", "{tmp}/onnx-export", "--backend", "onnx-int8"],
     "has no onnx/model_qint8.onnx"),
    ("serve-backend-openvino-int8-missing", ["serve", "-m", "{tmp}/onnx-export", "--backend", "openvino-int8"],
     "has no onnx/model_qint8.onnx"),
    # ---- export
    ("export-output-is-a-file", ["export", "-o", "{tmp}/afile"], "exists and is a file"),
    ("export-output-other-files", ["export", "-o", "{tmp}/afolder"], "a folder of other files"),
    ("export-output-read-only", ["export", "-o", "{ro}/x"], "cannot write in"),
    ("export-model-is-an-export", ["export", "-m", "{tmp}/onnx-export", "-o", "{tmp}/x"],
     "{tmp}/onnx-export: already an ONNX export"),
    ("export-float32-share-above-one", ["export", "-o", "{tmp}/x", "--float32-share", "1.5"],
     "--float32-share 1.5: a share between 0 and 1"),
    ("export-float32-share-negative", ["export", "-o", "{tmp}/x", "--float32-share", "-0.1"],
     "--float32-share -0.1: a share between 0 and 1"),
    ("export-float32-share-nan", ["export", "-o", "{tmp}/x", "--float32-share", "nan"],
     "--float32-share nan: a share between 0 and 1"),
    ("export-float32-share-text", ["export", "-o", "{tmp}/x", "--float32-share", "half"],
     "'--float32-share': Input should be a valid number"),
    ("export-openvino-takes-no-value", ["export", "-o", "{tmp}/x", "--openvino", "yes"], "unexpected extra argument"),
    ("export-openvino-model-is-an-export", ["export", "-m", "{tmp}/onnx-export/onnx/model.onnx", "-o", "{tmp}/x",
                                            "--openvino"], "onnx/model.onnx: already an ONNX export"),
    ("export-calibration-file-without-static-int8", ["export", "-o", "{tmp}/x", "--calibration-file",
                                                     "{tmp}/good.txt"],
     "--calibration-file {tmp}/good.txt: calibrates the static int8 graphs; add --static-int8"),
    ("export-calibration-size-without-static-int8", ["export", "-o", "{tmp}/x", "--calibration-size", "10"],
     "--calibration-size 10: sizes the static int8 graphs' calibration; add --static-int8"),
    ("export-calibration-size-zero", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-size", "0"],
     "--calibration-size"),
    ("export-calibration-size-text", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-size", "many"],
     "--calibration-size"),
    ("export-calibration-file-missing", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-file",
                                         "{tmp}/nowhere.txt"], "{tmp}/nowhere.txt: file not found"),
    ("export-calibration-file-is-a-folder", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-file",
                                             "{tmp}/afolder"], "{tmp}/afolder: is a folder"),
    ("export-calibration-file-empty", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-file",
                                       "{tmp}/empty.txt"], "{tmp}/empty.txt: no sentences to calibrate on"),
    ("export-calibration-file-blank-line", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-file",
                                            "{tmp}/blank-line.txt"], "{tmp}/blank-line.txt:2: empty line"),
    ("export-calibration-file-not-utf8", ["export", "-o", "{tmp}/x", "--static-int8", "--calibration-file",
                                          "{tmp}/latin1.txt"], "{tmp}/latin1.txt:2: not valid UTF-8"),
    # ---- push (no network: every row is refused before the Hub is reached)
    ("push-repo-id-three-parts", ["push", "{tmp}/notokenizer", "me/a/b", "--dry-run"],
     "repository id 'me/a/b' is not valid"),
    ("push-repo-id-double-dash", ["push", "{tmp}/notokenizer", "me/bad--name"], "repository id 'me/bad--name' is"),
    ("push-repo-id-space", ["push", "{tmp}/notokenizer", "me/my model", "--dry-run"], "is not valid"),
    ("push-not-a-model", ["push", "{tmp}/afolder", "me/model", "--dry-run"], "afolder has no modules.json or"),
    ("push-folder-missing", ["push", "{tmp}/no-model", "me/model", "--dry-run"], "no-model: no such folder"),
    ("push-folder-is-a-file", ["push", "{tmp}/afile", "me/model", "--dry-run"], "afile is a file"),
    ("push-offline", ["push", "{tmp}/notokenizer", "me/model"], "HF_HUB_OFFLINE=1 is set: a push needs"),
    ("push-repo-id-missing", ["push", "{tmp}/notokenizer"], "Missing argument 'repo_id'"),
    # ---- demo
    ("demo-out-is-a-file", ["demo", "--out", "{tmp}/afile"], "exists and is a file"),
    ("demo-out-read-only", ["demo", "--out", "{ro}/demo"], "cannot write in"),
    ("demo-config-invalid", ["demo", "--config", "{tmp}/broken.yaml", "--out", "{tmp}/d"], "broken.yaml:2"),
    ("demo-data-root-missing", ["demo", "--data-root", "{tmp}/nowhere", "--out", "{tmp}/d"], "not a directory"),
    ("demo-precision-unknown", ["demo", "--precision", "half", "--out", "{tmp}/d"],
     "'--precision': Value error, 'half' is not one of 'auto', 'fp32', 'bf16'"),
    ("doctor-unknown-option", ["doctor", "--verbose"], "No such option: --verbose"),
    # ---- outputs: nothing lost, nothing replaced (existing files, special files, links, a user's config.yaml)
    ("distill-overwrite-user-config-yaml", [*DISTILL, "--output-dir", "{tmp}/proj", "--overwrite"],
     "not a polyembed run folder (no .polyembed-run.json)"),
    ("distill-output-dir-is-a-fifo", [*DISTILL, "--output-dir", "{tmp}/fifo"], "fifo: is a FIFO"),
    ("distill-config-duplicate-key", ["train", "distill", "--config", "{tmp}/duplicate.yaml"],
     "duplicate.yaml:3: output_dir: given twice (first at line 2)"),
    ("distill-config-output-dir-nul", ["train", "distill", "--config", "{tmp}/nul.yaml"],
     "nul.yaml:2: output_dir: 'runs/a\\x00b' holds a NUL character"),
    ("encode-output-exists", ["encode", "{tmp}/good.txt", "-o", "{tmp}/afile"], "afile: exists; pass --overwrite"),
    ("encode-overwrite-a-user-file", ["encode", "{tmp}/good.txt", "-o", "{tmp}/afile", "--overwrite"],
     "polyembed did not write it"),
    ("encode-output-is-a-fifo", ["encode", "{tmp}/good.txt", "-o", "{tmp}/fifo"], "fifo: is a FIFO"),
    ("encode-output-is-a-link", ["encode", "{tmp}/good.txt", "-o", "{tmp}/afile-link"],
     "afile-link: is a symbolic link"),
    ("encode-output-is-a-link-loop", ["encode", "{tmp}/good.txt", "-o", "{tmp}/loop"], "loop: is a symbolic link"),
    ("encode-shards-output-is-a-fifo", ["encode", "{tmp}/good.txt", "-o", "{tmp}/fifo", "--shard-size", "10"],
     "fifo: is a FIFO"),
    ("encode-shards-output-is-a-link-loop", ["encode", "{tmp}/good.txt", "-o", "{tmp}/loop", "--shard-size", "10"],
     "loop: is a loop of symbolic links"),
    ("encode-shards-user-manifest", ["encode", "{tmp}/good.txt", "-o", "{tmp}/user-shards", "--shard-size", "10"],
     "user-shards/manifest.json: not a polyembed shard manifest"),
    ("mine-output-exists", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/afile"],
     "afile: exists; pass --overwrite"),
    ("mine-overwrite-a-user-file", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/afile", "--overwrite"],
     "polyembed did not write it"),
    ("mine-output-is-a-fifo", ["mine", "{tmp}/good.txt", "{tmp}/good.txt", "-o", "{tmp}/fifo"], "is a FIFO"),
    ("align-output-exists", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/afile"], "afile: exists; pass --overwrite"),
    ("align-overwrite-a-user-file", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/afile", "--overwrite"],
     "polyembed did not write it"),
    ("align-output-is-a-fifo", ["align", "{tmp}/pairs.txt", "-o", "{tmp}/fifo"], "is a FIFO"),
    ("translate-output-exists", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/afile", "-m", "{tmp}/afolder"],
     "afile: exists; pass --overwrite"),
    ("translate-output-is-a-fifo", ["data", "translate", "{tmp}/good.txt", "-o", "{tmp}/fifo", "-m",
                                    "{tmp}/afolder"], "is a FIFO"),
    ("eval-out-is-a-fifo", ["eval", "--tasks", "sts17", "--out", "{tmp}/fifo"], "fifo: is a FIFO"),
    ("eval-out-is-a-link-loop", ["eval", "--tasks", "sts17", "--out", "{tmp}/loop"], "loop of symbolic links"),
    ("export-output-is-a-fifo", ["export", "-o", "{tmp}/fifo"], "fifo: is a FIFO"),
    ("prune-out-is-a-fifo", ["models", "prune", "{tmp}/good.txt", "-o", "{tmp}/fifo"], "fifo: is a FIFO"),
    ("demo-out-is-a-fifo", ["demo", "--out", "{tmp}/fifo"], "fifo: is a FIFO"),
    # ---- no command / unknown command, global options
    ("verbose-and-quiet", ["-v", "-q", "doctor"], "give --verbose or --quiet, not both"),
    ("unknown-command", ["frobnicate"], "frobnicate"),
]


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unwritable_dir: Path) -> dict[str, str]:
    """The files the table refers to; the working folder is `tmp_path` so default outputs land there."""
    (tmp_path / "afile").write_text("I am a file\n")
    (tmp_path / "blocked.tsv.work").write_text("a file where mine's work folder would go\n")
    (tmp_path / "afolder").mkdir()
    (tmp_path / "afolder" / "thesis.txt").write_text("not a model, not a run\n")
    (tmp_path / "emptyroot").mkdir()
    (tmp_path / "notokenizer").mkdir()
    (tmp_path / "one-line.txt").write_text("Hallo Welt.\n", encoding="utf-8")
    (tmp_path / "pairs.txt").write_text("the house ||| das haus\n", encoding="utf-8")
    (tmp_path / "notokenizer" / "modules.json").write_text("[]\n")
    (tmp_path / "good.txt").write_text("Hello world.\nDas ist ein Haus.\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "latin1.txt").write_bytes(b"fine\ncaf\xe9\n")
    (tmp_path / "blank-line.txt").write_text("one\n\nthree\n")
    (tmp_path / "pairs.tsv").write_text(BITEXT, encoding="utf-8")
    (tmp_path / "empty-side.tsv").write_text("hello\thallo\nworld\t \n", encoding="utf-8")
    (tmp_path / "three.en").write_text("one\ntwo\nthree\n")
    (tmp_path / "two.de").write_text("eins\nzwei\n")
    base = {"languages": ["de"], "datasets": [], "parallel_files": [f"de={tmp_path}/pairs.tsv"],
            "output_dir": str(tmp_path / "runs" / "new"), "max_steps": 3}
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
    (tmp_path / "old-run").mkdir()
    (tmp_path / "old-run" / "config.yaml").write_text(
        dump_config(DistillConfig(**{**base, "output_dir": str(tmp_path / "old-run")})), encoding="utf-8"
    )
    (tmp_path / "latin1.yaml").write_bytes(b"seed: 1\nlanguages: [d\xe9]\n")
    (tmp_path / "control.yaml").write_bytes(b"seed: 1\nlanguages: [de\x01]\n")
    (tmp_path / "broken.yaml").write_text("seed: 1\n  batch_size: 3\n")
    (tmp_path / "unknown-key.yaml").write_text("seed: 1\nbatchsize: 3\n")
    (tmp_path / "negative-steps.yaml").write_text("seed: 1\nlanguages: [de]\nmax_steps: -5\n")
    (tmp_path / "wrong-type.yaml").write_text("seed: 1\nepochs: many\n")
    (tmp_path / "keep-checkpoints.yaml").write_text("seed: 1\nkeep_checkpoints: maybe\n")
    (tmp_path / "list.yaml").write_text("- de\n- fr\n")
    (tmp_path / "bad-date.yaml").write_text("seed: 1\nwhen: 2024-02-30\n")
    (tmp_path / "base-and-student.yaml").write_text("student: me5-small\nbase: minilm-en\n")
    (tmp_path / "good-link.txt").symlink_to(tmp_path / "good.txt")
    (tmp_path / "afile-link").symlink_to(tmp_path / "afile")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "proj" / "src").mkdir(parents=True)  # a user's project with a config.yaml of its own
    (tmp_path / "proj" / "thesis.txt").write_text("thesis\n")
    (tmp_path / "proj" / "config.yaml").write_text("port: 5432\n")
    (tmp_path / "user-shards").mkdir()
    (tmp_path / "user-shards" / "manifest.json").write_text("[1, 2]\n")
    (tmp_path / "duplicate.yaml").write_text(f"seed: 1\noutput_dir: {tmp_path}/a\noutput_dir: {tmp_path}/b\n")
    (tmp_path / "nul.yaml").write_text('seed: 1\noutput_dir: "runs/a\\0b"\n')
    (tmp_path / "onnx-export").mkdir()
    (tmp_path / "onnx-export" / "polyembed_onnx.json").write_text("{}\n")
    np.save(tmp_path / "good.npy", np.eye(2, 4, dtype=np.float32))
    np.save(tmp_path / "one.npy", np.ones((1, 4), dtype=np.float32))
    np.save(tmp_path / "nan.npy", np.array([[1, 0, 0, 0], [0, np.nan, 1, 0]], dtype=np.float32))
    np.save(tmp_path / "zeros.npy", np.zeros((2, 4), dtype=np.float32))
    np.save(tmp_path / "huge.npy", np.array([[1e300, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float64))
    (tmp_path / "empty.npy").write_bytes(b"")
    for name, damaged in (("shards", "shard-00000.npy"), ("shards-offsets", "shard-00000.offsets.npy"),
                          ("shards-ok", None)):  # `encode --shard-size` folders of good.txt, one file emptied
        encode_to_shards(HashingEncoder(dimension=8), tmp_path / "good.txt", tmp_path / name,
                         StreamOptions(shard_size=10, dtype="float32"), show_progress=False)
        if damaged:
            (tmp_path / name / damaged).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    return {"tmp": str(tmp_path), "ro": str(unwritable_dir)}


def _snapshot(root: Path) -> dict[str, tuple[int, int] | None]:
    return {
        p.relative_to(root).as_posix(): ((p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else None)
        for p in root.rglob("*")
    }


NEEDS_DATA = {"modular-single-no-pairs", "eval-prompt-name-unknown"}
"""Rows whose answer comes from the data itself (which languages have pairs there): they skip without a data root;
every other row is refused from what was typed, with or without one."""


def _has_data_root() -> bool:
    from polyembed.data.root import data_root
    from polyembed.errors import PolyembedError

    try:
        data_root()
    except PolyembedError:
        return False
    return True


_NEEDS_DATA_MARK = pytest.mark.skipif(not _has_data_root(), reason="reads the real data root, which is absent")


@pytest.mark.parametrize(("args", "expected"), [
    pytest.param(*case[1:], id=case[0], marks=[_NEEDS_DATA_MARK] if case[0] in NEEDS_DATA else []) for case in CASES])
def test_bad_input_is_one_clean_error_and_writes_nothing(
    workspace: dict[str, str], args: list[str], expected: str
) -> None:
    root = Path(workspace["tmp"])
    before = _snapshot(root)
    argv = [arg.format(**workspace) for arg in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, (argv, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # any other exception is a traceback
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert expected.format(**workspace) in errors[0], errors[0]
    assert _snapshot(root) == before, "bad input must leave the folder exactly as it was"


DATA_FREE = ["eval-out-is-a-file", "eval-out-below-a-file", "eval-model-folder-missing", "eval-model-is-a-file",
             "distill-unknown-dataset", "modular-cla-no-sts-dev"]


@pytest.mark.parametrize("case_id", DATA_FREE)
def test_what_was_typed_is_refused_before_the_data_root_is_looked_for(
    workspace: dict[str, str], no_data_root: None, case_id: str
) -> None:
    """A user with no data yet hears about the flag they mistyped, not about the data root."""
    _, args, expected = next(case for case in CASES if case[0] == case_id)
    test_bad_input_is_one_clean_error_and_writes_nothing(workspace, args, expected)


def test_the_table_covers_every_command() -> None:
    covered = {case[1][0] if case[1][0] not in ("models", "data", "train") else " ".join(case[1][:2])
               for case in CASES}
    assert {"eval", "encode", "models prune", "models prepare", "models transfer-vocabulary", "data list",
            "data translate", "align", "train distill", "train wacse", "train modular", "train emmax", "demo", "mine",
            "serve", "export", "doctor"} <= covered
    assert len(CASES) >= 90


def test_data_list_still_shows_the_registry_for_a_missing_root(workspace: dict[str, str]) -> None:
    result = CliRunner().invoke(app, ["data", "list", "--data-root", f"{workspace['tmp']}/nowhere"])
    assert result.exit_code == 2 and "sts2017" in result.stdout and "MISSING" in result.stdout


def test_data_list_before_any_data_root_is_set_up_is_a_listing(workspace: dict[str, str], no_data_root: None) -> None:
    """Nothing given and nothing found is where a new user starts: the registry (where to download each dataset),
    a note on stderr, exit 0; a root that was given but is wrong stays an error (above)."""
    result = CliRunner().invoke(app, ["data", "list"])
    assert result.exit_code == 0, result.output
    assert "sts2017" in result.stdout and "MISSING" in result.stdout
    assert "data root: none yet (no data root: set $POLYEMBED_DATA" in result.stderr


@pytest.mark.parametrize("argv", [["train", "distill", "--max-steps", "-5"], ["encode", "{tmp}/empty.txt", "-o",
                                                                               "{tmp}/v.npy", "-m", "minilm-en"]])
def test_the_installed_command_prints_one_error_line(workspace: dict[str, str], argv: list[str]) -> None:
    """The real entry point (`python -m polyembed`), not the test runner: stderr is one line, exit code 2 (-m is
    given: without it, a note that the default model runs comes first)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "polyembed", *[a.format(**workspace) for a in argv]],
        capture_output=True, text=True, env=env, timeout=120, cwd=workspace["tmp"],
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error:") and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_an_error_during_a_progress_bar_is_on_a_line_of_its_own(workspace: dict[str, str]) -> None:
    """A line that fails mid-stream: the bar's line ends before the error line, which is the last one."""
    bad = Path(workspace["tmp"]) / "bad-at-5.txt"
    bad.write_bytes(b"one\ntwo\nthree\nfour\ncaf\xe9\n")
    result = subprocess.run(
        [sys.executable, "-m", "polyembed", "encode", str(bad), "-m", "minilm-en", "--language", "en",
         "--shard-size", "1", "-o", f"{workspace['tmp']}/s"],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120,
        cwd=workspace["tmp"])
    assert result.returncode == 2, result.stderr
    last = result.stderr.rstrip("\n").split("\n")[-1]
    assert last.startswith("error: ") and "bad-at-5.txt:5: not valid UTF-8" in last, result.stderr


def test_numbers_beyond_float32_give_the_error_line_alone(workspace: dict[str, str]) -> None:
    """No numpy warning before the error line: the row is named instead."""
    tmp = workspace["tmp"]
    result = subprocess.run(
        [sys.executable, "-m", "polyembed", "mine", f"{tmp}/good.txt", f"{tmp}/good.txt", "-o", f"{tmp}/p.tsv",
         "--source-embeddings", f"{tmp}/huge.npy", "--target-embeddings", f"{tmp}/good.npy", "-m", "me5-small"],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120, cwd=tmp)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {tmp}/huge.npy: row 1 has NaN or infinite values (an embedding without a direction cannot be "
        "scored)"]
