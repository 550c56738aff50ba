"""The toy method's options: the shared BitextConfig plus one of its own."""

from __future__ import annotations

from dataclasses import dataclass

from polyembed.config import option
from polyembed.methods.base import BitextConfig


@dataclass
class ToyConfig(BitextConfig):
    """In-batch translation ranking with a configurable temperature."""

    temperature: float = option(0.05, "Softmax temperature of the in-batch ranking.", above=0)
    output_dir: str = option("runs/toy", "Run folder.")
