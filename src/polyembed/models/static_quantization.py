"""Static int8 graphs of an ONNX export: weights and activations int8, each activation's range fixed once from
calibration sentences (`polyembed export --static-int8`).

Why besides the dynamic int8 graph: dynamic quantisation measures every activation's range anew for each batch,
which onnxruntime does inside its int8 kernels but OpenVINO cannot: it runs the dynamic graph's
DynamicQuantizeLinear as float operations, so that graph is no faster there than float32. A graph whose
activation ranges are constants (FakeQuantize in OpenVINO, QuantizeLinear/DequantizeLinear pairs in ONNX) is
what both runtimes map onto their int8 kernels. Two quantisers make one each, from the export's float32 graph
and the same calibration sentences:

- OpenVINO: NNCF's post-training quantisation, with the settings optimum-intel's `OVQuantizationConfig` defaults
  to and sentence-transformers' `export_static_quantized_openvino_model` uses (transformer model type, mixed
  preset: symmetric weights and asymmetric activations, fast bias correction, no overflow fix, nothing ignored),
  saved under sentence-transformers' name for it (`openvino/openvino_model_qint8_quantized.xml`).
- onnxruntime: its static quantiser in QDQ format (per-channel int8 weights, MinMax activation ranges), the
  feed-forward output projections with the widest inputs kept float32 as in the dynamic graph: one range for
  every token of every sentence is what a few wide-outlier layers fit worst.

Each calibration sentence is one sample, unpadded, with the model's prompt before it as the encoder adds it:
padding would add positions whose activations no real token has.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

Sample = dict[str, np.ndarray]
"""One calibration sample: the graph's inputs (input_ids, attention_mask) for one sentence."""


def calibration_samples(tokenizer: Any, sentences: Sequence[str], prompt: str, max_length: int) -> list[Sample]:
    """Each sentence tokenised as the export's encoder does it (prompt first, truncated to `max_length`), alone."""
    samples = []
    for sentence in sentences:
        batch = tokenizer([prompt + sentence], truncation=True, max_length=max_length, return_tensors="np")
        samples.append({"input_ids": batch["input_ids"].astype(np.int64),
                        "attention_mask": batch["attention_mask"].astype(np.int64)})
    return samples


def quantize_openvino_static(graph: Path, xml: Path, samples: list[Sample]) -> None:
    """NNCF post-training quantisation of the float32 ONNX `graph`, saved as OpenVINO IR at `xml` (+ `.bin`)."""
    import nncf
    import openvino

    model = openvino.Core().read_model(str(graph))
    with contextlib.redirect_stdout(sys.stderr):  # NNCF's progress bars: stdout is the command's answer
        quantized = nncf.quantize(
            model, nncf.Dataset(samples), subset_size=len(samples), model_type=nncf.ModelType.TRANSFORMER,
            preset=nncf.QuantizationPreset.MIXED, fast_bias_correction=True,
            advanced_parameters=nncf.AdvancedQuantizationParameters(overflow_fix=nncf.OverflowFix.DISABLE),
        )
    xml.parent.mkdir(exist_ok=True)
    openvino.save_model(quantized, str(xml), compress_to_fp16=False)  # int8 weights stay int8 in the .bin


def quantize_onnx_static(graph: Path, out: Path, samples: list[Sample], float32_nodes: list[str]) -> None:
    """onnxruntime's static QDQ quantisation of the float32 `graph` into `out`: int8 weights per output channel,
    int8 activations with ranges from `samples` (MinMax); the MatMul nodes named in `float32_nodes` stay float32."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Samples(CalibrationDataReader):
        def __init__(self) -> None:
            self.rest = iter(samples)

        def get_next(self) -> Sample | None:
            return next(self.rest, None)

    with tempfile.TemporaryDirectory(dir=out.parent) as scratch:  # beside the export: the graph may be large
        typed = Path(scratch) / "typed.onnx"
        _declare_fused_outputs_float(graph, typed)
        quantize_static(
            str(typed), str(out), Samples(), quant_format=QuantFormat.QDQ, per_channel=True,
            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax,
            op_types_to_quantize=["MatMul"], nodes_to_exclude=float32_nodes,
            # CalibMaxIntermediateOutputs: fold the ranges every few samples instead of holding every activation
            # of every sample in memory
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "CalibMaxIntermediateOutputs": 16},
        )


def _declare_fused_outputs_float(graph: Path, out: Path) -> None:
    """A copy of `graph` that declares the main output of each fused operator (onnxruntime's com.microsoft
    SkipLayerNormalization, BiasGelu, Attention...) float. ONNX shape inference does not know those operators, and
    the static quantiser leaves unquantised every MatMul whose input type it cannot infer: in the fused graph
    that is most of them, which would keep float32 activations with int8 weights (no int8 kernel, no speed)."""
    import onnx

    model = onnx.load(str(graph))
    declared = {value.name for value in (*model.graph.value_info, *model.graph.input, *model.graph.output)}
    model.graph.value_info.extend(
        onnx.helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT, None)
        for node in model.graph.node if node.domain == "com.microsoft" and node.output[0] not in declared)
    onnx.save_model(model, str(out), save_as_external_data=True)  # external data: any size of graph


def write_static_graphs(staging: Path, graph: str, tokenizer: Any, settings: Any, sentences: Sequence[str],
                        calibration: str, float32_nodes: list[str], openvino: bool) -> dict[str, str]:
    """The static int8 graphs of an export being staged in `staging`, from its float32 `graph`: onnxruntime's
    always, OpenVINO's with `openvino`. Returns each file's line for the export's card."""
    from polyembed.models.export_files import OPENVINO_STATIC_INT8_FILE, STATIC_INT8_FILE

    samples = calibration_samples(tokenizer, sentences, settings.prompt, settings.max_seq_length)
    logger.info("export: static int8 (onnxruntime, calibrated on %s) to %s", calibration, STATIC_INT8_FILE)
    quantize_onnx_static(staging / graph, staging / STATIC_INT8_FILE, samples, float32_nodes)
    layers = ", ".join(name.split("/layer.")[-1].split("/")[0] for name in float32_nodes) or "none"
    files = {STATIC_INT8_FILE: f"int8 weights (per channel) and activations with static ranges calibrated on "
                               f"{calibration} (QDQ, onnxruntime's static quantiser); float32 feed-forward output "
                               f"projections where their input is widest (layers {layers})"}
    if openvino:
        logger.info("export: static int8 (NNCF, calibrated on %s) to %s", calibration, OPENVINO_STATIC_INT8_FILE)
        quantize_openvino_static(staging / graph, staging / OPENVINO_STATIC_INT8_FILE, samples)
        files[OPENVINO_STATIC_INT8_FILE] = (f"OpenVINO IR, int8 weights and activations with static ranges "
                                            f"calibrated on {calibration} (NNCF post-training quantisation, "
                                            "sentence-transformers' name for it; with its `.bin`)")
    return files
