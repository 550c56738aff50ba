# The two README commands: `make demo` (set up + main job) and `make test` (set up + tests).
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup demo test test-slow lint benchmarks
setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/polyembed eval --model me5-small --suite default --out results/me5-small-default

test: setup
	.venv/bin/python -m pytest -q

test-slow: setup
	.venv/bin/python -m pytest -q -m slow

lint: setup
	.venv/bin/ruff check src tests benchmarks

benchmarks: setup
	.venv/bin/python benchmarks/eval_suites.py
