# tinySSB for real radios — the two commands: `make run` and `make test`.
# Both create .venv on first use and install the project with all its extras.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: all setup accel test run demo bench lint clean flash

all: test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	@touch $(STAMP)

setup: $(STAMP) accel

# compile the Node's and the simulator's hot modules with mypyc into build/accel/
# (30-40 s, once; nothing when current); without a C compiler everything runs as
# plain Python, slower (gateway/accel.py)
accel: $(STAMP)
	@$(BIN)/python scripts/build_accel.py --optional

test: $(STAMP) accel
	$(BIN)/python -m pytest

# the main job: simulate grid-25 under the reference and default policies, analyze both
# captures in Spark (needs Java 17+), print the summary; the report is out/make-run/
run: $(STAMP) accel
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m spark.main_job --out out/make-run

# two gateways on loopback WebSocket replicate a demo feed
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash scripts/demo.sh

bench: $(STAMP) accel
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check gateway tests bench
	$(BIN)/mypy gateway

# make flash                       list the boards
# make flash BOARD=heltec_v3 PORT=/dev/ttyUSB0 [MPY_IMAGE=ESP32_GENERIC_S3-....bin]
# Without MPY_IMAGE the MicroPython release pinned in hardware/boards/BOARD.json (url,
# sha256) is downloaded, checked and cached in .cache/micropython/.
# DRY_RUN=1 prints what it would download and run, and downloads and installs nothing.
FLASH_STAMP := $(VENV)/.flash-stamp
FLASH_ARGS   = $(if $(BOARD),--board $(BOARD)) $(if $(PORT),--port $(PORT)) \
               $(if $(MPY_IMAGE),--image $(MPY_IMAGE)) --python $(BIN)/python

$(FLASH_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[flash]'
	@touch $(FLASH_STAMP)

flash:
ifeq ($(strip $(BOARD)),)
	@$(PYTHON) hardware/flash.py
else ifeq ($(DRY_RUN),1)
	@$(PYTHON) hardware/flash.py $(FLASH_ARGS) --dry-run
else
	@$(MAKE) --no-print-directory $(FLASH_STAMP)
	$(BIN)/python hardware/flash.py $(FLASH_ARGS)
endif

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info .cache
