#!/usr/bin/env bash
# What polyembed does on a CUDA machine, in one short run: the device and precision `auto` picks, the documented
# new-language command on tiny models (no --device given), encode (GPU and CPU) / eval --baseline / export / mine /
# serve on its model, and the test suite with CUDA visible (its tiny models then train and encode on the GPU). No weights or data root are needed: the
# models are built from tests/helpers.py, so the run fits a machine that reaches no network.
#
#   bash benchmarks/accelerator/check.sh OUTDIR [PYTEST_SECONDS]
#   PYTEST_PATHS="tests/methods tests/serve" SKIP_CLI=1 bash benchmarks/accelerator/check.sh OUTDIR 300
#
# OUTDIR gets machine.txt, cli.log, pytest.log and junit.xml; the exit status is the CLI part's. Each CLI step
# starts a process (about 20 s on a GPU machine): with little device time, run the suite with SKIP_CLI=1 first.
set -u -o pipefail
OUTDIR=${1:?usage: check.sh OUTDIR [PYTEST_SECONDS]}
PYTEST_SECONDS=${2:-240}
mkdir -p "$OUTDIR"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d)

$PY - >"$OUTDIR/machine.txt" 2>&1 <<'PYEOF'
import platform
import torch, transformers, sentence_transformers
from polyembed.device import resolve_device
from polyembed.models.precision import resolve_precision
print("python", platform.python_version(), "| torch", torch.__version__, "| transformers", transformers.__version__,
      "| sentence-transformers", sentence_transformers.__version__)
print("cuda available:", torch.cuda.is_available(), "| devices:", torch.cuda.device_count())
if torch.cuda.is_available():
    print("device 0:", torch.cuda.get_device_name(0), "| bf16:", torch.cuda.is_bf16_supported())
device = resolve_device(None)
print("auto device:", device, "| auto precision:", resolve_precision("auto", device=device))
PYEOF
cat "$OUTDIR/machine.txt"

status=0
cli() { echo "+ $*"; local start=$SECONDS; "$@"; local rc=$?; echo "= rc $rc in $((SECONDS - start)) s"; return $rc; }
if [ -z "${SKIP_CLI:-}" ]; then {
  set -e
  $PY - "$WORK" <<'PYEOF'
import sys
from pathlib import Path
from tests.helpers import PAIRS, tiny_sentence_transformer
root = Path(sys.argv[1])
(root / "my.en").write_text("".join(f"{en}\n" for en, _ in PAIRS), encoding="utf-8")
(root / "my.yo").write_text("".join(f"{other}\n" for _, other in PAIRS), encoding="utf-8")
tiny_sentence_transformer(root / "base", seed=0)
tiny_sentence_transformer(root / "teacher", seed=1)
PYEOF
  cli $PY -m polyembed train new-language --parallel-files "yo=$WORK/my.en,$WORK/my.yo" --output-dir "$WORK/runs/yo" \
      --student "$WORK/base" --teacher "$WORK/teacher" --max-steps 20 --batch-size 16
  $PY -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('steps', 'train_seconds', 'peak_memory_mb')}, d['details']['held_out']['rows'])" "$WORK/runs/yo/training.json"
  cli $PY -m polyembed -v encode "$WORK/my.yo" -o "$WORK/yo.npy" -m "$WORK/runs/yo/model" --language yo
  cli $PY -m polyembed -v encode "$WORK/my.yo" -o "$WORK/yo-cpu.npy" -m "$WORK/runs/yo/model" --language yo --device cpu
  $PY -c "import numpy as n,sys; a,b=n.load(sys.argv[1]),n.load(sys.argv[2]); print('rows', a.shape, 'largest |cuda - cpu|', float(abs(a.astype('f4')-b.astype('f4')).max()))" "$WORK/yo.npy" "$WORK/yo-cpu.npy"
  mkdir -p "$WORK/held-out" && cp "$WORK/my.en" "$WORK/held-out/own.en" && cp "$WORK/my.yo" "$WORK/held-out/own.yo"
  cli $PY -m polyembed eval -m "$WORK/runs/yo/model" --baseline "$WORK/base" --tasks parallel-retrieval \
      --task-arg "directory=$WORK/held-out" -o "$WORK/eval" --no-plots
  grep -E "^\|" "$WORK/eval/report.md" | head -8
  cli $PY -m polyembed export -m "$WORK/runs/yo/model" -o "$WORK/export"
  cli $PY -m polyembed encode "$WORK/my.yo" -o "$WORK/yo-onnx.npy" -m "$WORK/export" --language yo
  $PY -c "import numpy as n,sys; a,b=n.load(sys.argv[1]),n.load(sys.argv[2]); print('largest |onnx int8 - torch|', float(abs(a.astype('f4')-b.astype('f4')).max()))" "$WORK/yo.npy" "$WORK/yo-onnx.npy"
  cli $PY -m polyembed mine "$WORK/my.en" "$WORK/my.yo" -o "$WORK/mined.tsv" -m "$WORK/runs/yo/model" \
      --source-language en --target-language yo
  head -3 "$WORK/mined.tsv"
  $PY -m polyembed serve -m "$WORK/runs/yo/model" --port 8765 > "$WORK/serve.log" 2>&1 &
  server=$!
  $PY - <<'PYEOF'
import json, time, urllib.request
for _ in range(120):
    try:
        models = json.load(urllib.request.urlopen("http://127.0.0.1:8765/v1/models", timeout=2))
        break
    except OSError:
        time.sleep(1)
print("/v1/models:", json.dumps(models))
body = json.dumps({"input": ["the cat sees the house", "die katze sieht das haus"]}).encode()
request = urllib.request.Request("http://127.0.0.1:8765/v1/embeddings", body, {"Content-Type": "application/json"})
answer = json.load(urllib.request.urlopen(request, timeout=30))
print("/v1/embeddings:", len(answer["data"]), "rows of", len(answer["data"][0]["embedding"]))
PYEOF
  kill -INT $server; wait $server || true
  echo "--- serve log"; cat "$WORK/serve.log"
} 2>&1 | tee "$OUTDIR/cli.log"
status=$?
fi

timeout "$PYTEST_SECONDS" $PY -m pytest -q -n "${PYTEST_WORKERS:-12}" -rfE --junitxml "$OUTDIR/junit.xml" \
    --ignore tests/test_docs_site.py --ignore tests/test_install.py ${PYTEST_PATHS:-tests} 2>&1 | tee "$OUTDIR/pytest.log" | tail -40
exit $status
