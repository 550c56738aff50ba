"""What the scale benchmark's runner and renderer share: where its JSON goes, the section's markers, the command
that names each table, the tables in the section's order and the labels the rows carry."""

from __future__ import annotations

from benchmarks.common.results import RESULTS

OUT = RESULTS / "scale"
START, END = "<!-- scale:start -->", "<!-- scale:end -->"
COMMAND = "python -m benchmarks.scale.run"
TATOEBA_LANGUAGES = ["deu", "amh", "kaz", "swh"]
STSB_LANGUAGES = ["en", "de", "es", "ru", "zh"]
"""stsb-multi-mt languages of the export tables: English and four en-X cross-lingual pairs (Latin, Cyrillic
and Chinese script), since int8 error shows first in cross-lingual pairs."""
STATIC_VARIANTS = ("onnx static int8", "openvino static int8")
"""The export table's static int8 variants (`export --static-int8`: activation ranges calibrated on sentences)."""
ALL_FLOAT32 = "onnx int8, every FF output fp32"
"""The int8 graph as exports before 2026-11-28 made it (`float32_share=0`: every feed-forward output projection
float32), beside the default that keeps only the wide ones."""
TABLES = ("export", "int8-dev", "mining", "mining-scale", "bucc", "stream")
