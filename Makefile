# Every target bootstraps .venv on first use, so a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

# `make run PHOTOS=/path/to/photos` imports that folder; without PHOTOS, a generated
# sample set is written under the library home and imported. The import (scan, then
# render, then similar) runs in the server's embedded worker while the web UI at
# http://127.0.0.1:8765/ shows it live; sign in with the token the server prints.
LIBRARY_HOME := $(or $(PHOTO_PIPELINE_HOME),$(HOME)/.local/share/photo-pipeline)
SAMPLE_DIR := $(LIBRARY_HOME)/sample-photos

run: $(STAMP)
	@if [ -z "$(PHOTOS)" ]; then $(BIN)/photo-pipeline sample "$(SAMPLE_DIR)"; fi
	$(BIN)/photo-pipeline import "$(or $(PHOTOS),$(SAMPLE_DIR))"
	$(BIN)/photo-pipeline serve

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

format: $(STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

bench: $(STAMP)
	$(BIN)/python bench/coordinator.py

bench-render: $(STAMP)
	$(BIN)/python bench/render.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
