# The two README commands: `make demo` (set up + main job) and `make test` (set up + tests).
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
# Python writes its bytecode cache (into .venv and the gitignored __pycache__ folders) even where the machine
# sets PYTHONDONTWRITEBYTECODE: without it every polyembed process compiles the ~4,000 modules of torch,
# transformers and sentence-transformers again, ~10 s each on 2 cores (the test suite starts dozens).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup demo test test-slow test-st-backends lint docs benchmarks render lock
setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/polyembed demo --output results/demo

# One pytest-xdist worker per core (at most 4: each holds its own torch and models), a test file per worker at a
# time (--dist loadfile: a file's module fixtures are built once); `make test PYTEST_WORKERS='-p no:xdist'` runs
# the suite in one process.
PYTEST_WORKERS ?= -n auto --maxprocesses 4 --dist loadfile
test: setup
	.venv/bin/python -m pytest -q $(PYTEST_WORKERS)

test-slow: setup
	.venv/bin/python -m pytest -q -m slow

# sentence-transformers' own openvino backend on a polyembed export, in a venv of its own: optimum-intel needs
# transformers < 5.6, polyembed's lock a newer one. PyPI's torchvision (which optimum-intel pulls in) fails to
# import beside torch 2.13.0's CPU wheel, and nothing here needs it.
.st-backends-venv/bin/python:
	python3 -m venv .st-backends-venv
	.st-backends-venv/bin/pip install -q torch==2.13.0 sentence-transformers==6.2.0 "transformers>=5.0,<5.6" \
		"optimum-intel[openvino]==2.2.0"
	.st-backends-venv/bin/pip uninstall -y -q torchvision

test-st-backends: setup .st-backends-venv/bin/python
	POLYEMBED_ST_BACKENDS_PYTHON=$(CURDIR)/.st-backends-venv/bin/python .venv/bin/python -m pytest -q \
		tests/models/test_onnx_export.py tests/models/test_static_int8.py -k plain_sentence_transformers

# ruff, then mypy over src/polyembed ([tool.mypy] in pyproject.toml)
lint: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/mypy

# The documentation site (mkdocs.yml, docs/) into site/: a broken link, a missing anchor or API object fails it.
docs: setup
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site

# The benchmarks are a package run as modules from the repository root (benchmarks/__init__.py).
benchmarks: setup
	.venv/bin/python -m benchmarks.eval_suites.run
	.venv/bin/python -m benchmarks.distill.run acceptance --seeds 0 1 --set max_steps=400 max_pairs_per_source=1000 eval_steps=100
	.venv/bin/python -m benchmarks.distill.run throughput

# Every generated section of docs/benchmarks.md from the stored results (a section without its JSON stays).
render: setup
	.venv/bin/python -m benchmarks.render_all

# Move the lock deliberately: resolve pyproject.toml's ranges again (newest versions that satisfy them), the
# core and every extra (serve, export, ray, mteb, alignment, fasttext, dev, docs): CI and `make setup` install them all.
lock:
	.venv/bin/uv pip compile pyproject.toml --all-extras --python-version 3.11 --find-links /opt/wheels \
		--custom-compile-command "make lock" -o requirements-lock.txt
