PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest browser postgres compose-cli emoji-font screenshots bench clean \
	catalogs messages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,bench]"
	touch $(STAMP)
	@$(MAKE) --no-print-directory catalogs

# The message catalogs (bot/locales; README, "Adding a language"). `make messages` extracts every
# _(), N_() and ngettext() of the code and t()/tn() of the playground's scripts into genbot.pot,
# then merges it into each language's genbot.po (new sentences untranslated, removed ones
# dropped: git keeps them). The template carries no creation date: branches that each ran
# `make messages` would otherwise conflict on that line alone. genbot reads the .mo files
# compiled from the .po files: never committed, rebuilt whenever a .po changes, before the
# tests, the demo and the screenshots.
LOCALES := bot/locales
CATALOGS := $(wildcard $(LOCALES)/*/LC_MESSAGES/genbot.po)
COMPILED := $(CATALOGS:.po=.mo)
EXTRACT := -F babel.cfg -k _ -k N_ -k ngettext:1,2 -k pgettext:1c,2 -k t -k tn:1,2 \
	-c Translators: \
	--add-location=file --sort-output --project=genbot --version=0.1.0 \
	--copyright-holder="genbot's authors"

catalogs: $(COMPILED)

$(LOCALES)/%/LC_MESSAGES/genbot.mo: $(LOCALES)/%/LC_MESSAGES/genbot.po | $(STAMP)
	$(BIN)/pybabel -q compile -D genbot -l $* -i $< -o $@

messages: $(STAMP)
	$(BIN)/pybabel -q extract $(EXTRACT) -o $(LOCALES)/genbot.pot .
	sed -i '/^"POT-Creation-Date: /d' $(LOCALES)/genbot.pot
	$(BIN)/pybabel -q update -D genbot -i $(LOCALES)/genbot.pot -d $(LOCALES) \
	    --no-fuzzy-matching --ignore-obsolete --ignore-pot-creation-date

demo: $(STAMP) catalogs
	$(BIN)/genbot demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite in parallel (pytest-xdist): most tests wait on loopback I/O, timers and child
# processes, so a few workers per core pay (docs/benchmarks.md, "The test suite"). Each worker
# starts its own PostgreSQL cluster and Chromium when its tests need them. Byte code is written
# (whatever PYTHONDONTWRITEBYTECODE says): every worker and every `genbot` child process would
# otherwise compile the project and rewrite the tests' asserts again.
PYTEST_WORKERS ?= 3
pytest: $(STAMP) catalogs browser postgres compose-cli
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup

# The browser test drives Debian's chromium; install it when missing (as root with apt-get),
# else say how.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	    if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	        echo "installing chromium for the browser test (apt-get)"; \
	        apt-get update -qq && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	    else \
	        echo "the browser test needs Chromium: run 'sudo apt-get install chromium' (Debian/Ubuntu), then make test again" >&2; \
	        exit 1; \
	    fi; \
	}

# The PostgreSQL tests start a throwaway server from the machine's PostgreSQL binaries; install
# Debian's postgresql when missing (as root with apt-get). Without it those tests are skipped.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v pg_config >/dev/null 2>&1 || { \
	    if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	        echo "installing postgresql for the PostgreSQL tests (apt-get)"; \
	        apt-get update -qq && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	        service postgresql stop >/dev/null 2>&1 || true; \
	    else \
	        echo "PostgreSQL is not installed: its tests will be skipped ('sudo apt-get install postgresql' runs them)" >&2; \
	    fi; \
	}

# The container tests validate compose.yaml with `docker compose config` (no daemon needed); when
# neither the compose plugin nor docker-compose is there, install Debian's docker-compose (as root).
compose-cli:
	@docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || { \
	    if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	        echo "installing docker-compose for the container tests (apt-get)"; \
	        apt-get update -qq && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null; \
	    else \
	        echo "the container tests need docker compose: run 'sudo apt-get install docker-compose' (Debian/Ubuntu), then make test again" >&2; \
	        exit 1; \
	    fi; \
	}

test: lint typecheck pytest

# The tests at the issues' full sizes (the 300-job kill -9 cluster), too slow for make test.
.PHONY: test-heavy
test-heavy: $(STAMP) postgres
	$(BIN)/python -m pytest -q --heavy -m heavy

# README's pictures: the playground in Chromium, with Debian's colour emoji font so buttons like
# 🔄 and 🌱 are drawn (installed when missing, as root with apt-get).
emoji-font:
	@fc-list 2>/dev/null | grep -qi "color emoji" || { \
	    if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	        echo "installing fonts-noto-color-emoji for the screenshots (apt-get)"; \
	        apt-get update -qq && \
	        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-color-emoji >/dev/null; \
	    else \
	        echo "the screenshots need a colour emoji font: run 'sudo apt-get install fonts-noto-color-emoji'" >&2; \
	        exit 1; \
	    fi; \
	}

screenshots: $(STAMP) catalogs browser emoji-font
	$(BIN)/python -m tests.genbot.screenshot docs/playground.png
	$(BIN)/python -m tests.genbot.screenshot --language de docs/playground-de.png
	$(BIN)/python -m tests.genbot.screenshot --frames docs/job

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info $(COMPILED)
