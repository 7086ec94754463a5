#!/usr/bin/env bash
# The test command: install, start the real servers, run the suite, stop what was started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
bash scripts/services.sh start
trap 'bash scripts/services.sh stop' EXIT
PYTHONPATH=src lint-imports --no-cache  # the layer contract of pyproject.toml
python3 -m pytest -q -p no:cacheprovider "$@"
