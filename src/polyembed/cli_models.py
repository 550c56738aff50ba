"""The `polyembed models` and `polyembed data` commands: the built-in models, smaller or new-vocabulary copies
of a model, and the dataset registry. Thin typer wrappers like the rest of the CLI; they register on
`polyembed.cli_app`'s `models_app` and `data_app`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from polyembed.cli_app import (
    BUILTIN_DEFAULT_MODEL,
    DataRootOption,
    DeviceOption,
    ModelOption,
    clean_errors,
    data_app,
    models_app,
    note_default_model,
)
from polyembed.errors import PolyembedError


@models_app.command("list")
def models_list() -> None:
    """Show the built-in offline models: name, languages, licence and source.

    Examples:
    polyembed models list"""
    from polyembed.models.loading import BUILTIN_MODELS

    for info in BUILTIN_MODELS.values():
        typer.echo(
            f"{info.name:12s} {info.languages:32s} {info.licence:12s} {info.description}\n"
            f"{'':12s} source: {info.source}"
        )


@models_app.command("prepare")
@clean_errors
def models_prepare(
    name: Annotated[str, typer.Argument(help="Built-in model name (see `polyembed models list`).")] = (
        BUILTIN_DEFAULT_MODEL),
) -> None:
    """Build (convert) a built-in model into the cache now, so later runs start at once.

    Examples:
    polyembed models prepare
    polyembed models prepare mpnet-en"""
    from polyembed.models.loading import BUILTIN_MODELS

    if name not in BUILTIN_MODELS:
        raise PolyembedError(f"unknown built-in model '{name}'; known: {', '.join(BUILTIN_MODELS)}")
    typer.echo(f"{name}: {BUILTIN_MODELS[name].locate()}")


@models_app.command("prune")
@clean_errors
def models_prune(
    corpus: Annotated[list[Path], typer.Argument(help="Text files whose vocabulary is kept.")],
    out: Annotated[Path, typer.Option("--output", "-o", help="Folder for the pruned model.")],
    context: typer.Context,
    model: ModelOption = BUILTIN_DEFAULT_MODEL,
    overwrite: Annotated[
        bool, typer.Option(help="Replace a model polyembed saved in --output before (other folders are refused).")
    ] = False,
    device: DeviceOption = None,
) -> None:
    """Keep only the vocabulary pieces a corpus uses: a smaller language-specific model.

    Examples:
    polyembed models prune corpus.kk.txt -m me5-small -o models/me5-kk
    polyembed models prune news.yo.txt books.yo.txt -m runs/yo/model -o models/yo-small"""
    note_default_model(context)
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.data.io import read_lines
    from polyembed.models.loading import load_model
    from polyembed.models.pruning import prune_vocabulary
    from polyembed.models.saving import check_model_output_dir

    check_model_output_dir(out, overwrite, "--output")
    lines = [line for path in corpus for line in read_lines(path, allow_empty=True) if line.strip()]
    if not lines:
        raise PolyembedError(f"{', '.join(map(str, corpus))}: no text to keep a vocabulary for")
    path = prune_vocabulary(load_model(model), lines, out, overwrite=overwrite)
    typer.echo(f"pruned model written to {path}")


@models_app.command("transfer-vocabulary")
@clean_errors
def models_transfer_vocabulary(
    corpus: Annotated[
        list[str], typer.Argument(help="Target-language text files, FILE or LANG=FILE (one sentence per line).")
    ],
    out: Annotated[Path, typer.Option("--output", "-o", help="Folder for the new model (or one per language).")],
    context: typer.Context,
    model: ModelOption = BUILTIN_DEFAULT_MODEL,
    vocabulary_size: Annotated[int, typer.Option(help="Tokens in each new vocabulary.", min=1)] = 16000,
    per_language: Annotated[
        bool, typer.Option(help="One tokenizer and model per LANG (every corpus needs LANG=), not one joint one.")
    ] = False,
    vocabulary_auxiliary: Annotated[
        Literal["ppmi-svd", "fasttext"], typer.Option(
            help="FOCUS token space: ppmi-svd, or fasttext (gensim, as in the FOCUS code).")
    ] = "ppmi-svd",
    vocabulary_unseen: Annotated[Literal["random", "decompose"], typer.Option(
        help="Rare new tokens: random (FOCUS) or decompose (old pieces).")] = "random",
    seed: Annotated[int, typer.Option(help="Seed of the tokenizer's sample and the new vectors.", min=0)] = 0,
    overwrite: Annotated[
        bool, typer.Option(help="Replace a model polyembed saved in --output before (other folders are refused).")
    ] = False,
    device: DeviceOption = None,
) -> None:
    """Give a model a new vocabulary trained on target-language text, FOCUS-initialised (continued training
    then adapts it). --per-language makes one model per language, as the modular-encoder recipe does.

    The options have the names `polyembed train distill` gives them (--vocabulary-size, --vocabulary-auxiliary,
    --vocabulary-unseen), so a transfer tried here runs the same in training.

    Examples:
    polyembed models transfer-vocabulary corpus.kk.txt -m me5-small -o models/me5-kk-new
    polyembed models transfer-vocabulary kk=kk.txt uz=uz.txt --per-language -o models/per-language
    polyembed models transfer-vocabulary kk.txt --vocabulary-auxiliary fasttext -o models/kk-ft"""
    note_default_model(context)
    from polyembed.device import choose_device

    choose_device(device)
    from polyembed.data.io import read_lines
    from polyembed.languages import require_known_language
    from polyembed.models.saving import check_model_output_dir
    from polyembed.models.vocabulary_transfer import check_choices

    check_choices(vocabulary_unseen, vocabulary_auxiliary)
    check_model_output_dir(out, overwrite, "--output")
    texts: dict[str | None, list[str]] = {}
    for spec in corpus:
        prefix, sep, rest = spec.partition("=")
        language, path = (prefix.strip(), rest) if sep else (None, spec)
        if sep and not (language and rest):
            raise PolyembedError(f"corpus '{spec}': expected FILE or LANG=FILE")
        if per_language and language is None:
            raise PolyembedError(f"corpus '{spec}': --per-language needs LANG=FILE for every corpus")
        code = require_known_language(language, f"corpus '{spec}'") if language is not None else None
        lines = [line for line in read_lines(path, allow_empty=True) if line.strip()]
        if not lines:
            raise PolyembedError(f"{path}: no text to train a vocabulary on")
        texts.setdefault(code if per_language else None, []).extend(lines)
    options: dict[str, Any] = {"vocab_size": vocabulary_size, "auxiliary_space": vocabulary_auxiliary,
                               "unseen": vocabulary_unseen, "seed": seed}
    if per_language:
        from polyembed.models.vocabulary_transfer import transfer_vocabulary_per_language

        per_code = {code: lines for code, lines in texts.items() if code is not None}  # every key, per language
        transfer_vocabulary_per_language(model, per_code, out, overwrite=overwrite, **options)
    else:
        from polyembed.models.vocabulary_transfer import transfer_vocabulary

        transfer_vocabulary(model, texts[None], out, overwrite=overwrite, **options)


@data_app.command("list")
@clean_errors
def data_list(data_root: DataRootOption = None) -> None:
    """Show the registered datasets, whether they are present locally, their licence and source.

    Examples:
    polyembed data list
    polyembed data list --data-root /data/polyembed"""
    import os

    from polyembed.data.registry import DATASETS
    from polyembed.data.root import ENV_VAR
    from polyembed.data.root import data_root as resolve

    missing: PolyembedError | None
    try:
        root: Path | None = resolve(data_root)
    except PolyembedError as err:
        root, missing = None, err
        if data_root is None and not os.environ.get(ENV_VAR):  # none set up yet: the listing says where to get them
            typer.echo(f"data root: none yet ({err})", err=True)
            missing = None
    else:
        missing = None
        typer.echo(f"data root: {root}")
    for info in DATASETS.values():
        present = "present" if root is not None and info.available(root) else "MISSING"
        typer.echo(
            f"{info.name:22s} {present:8s} {info.licence[:28]:28s} {len(info.languages):3d} langs  {info.source}"
        )
    if missing is not None:  # a root that was given but is wrong: the registry is still worth showing, but an error
        raise missing


# --------------------------------------------------------------------------------------------- training
