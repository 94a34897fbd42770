#!/usr/bin/env bash
# Code health: ruff (lint rules in [tool.ruff]) and mypy (strict on finevo/ and runner/, [tool.mypy]),
# both configured in pyproject.toml.
#
#   bash scripts/lint.sh
#
# Uses whichever `python` is first on PATH (activate the project's venv first; ruff and mypy come
# with the dev extras: pip install -e '.[dev]'). Both checks always run, so one run shows every
# finding. Exit codes: 0 clean; 1 findings from ruff or mypy; 2 a checker is not installed.
set -uo pipefail
cd "$(dirname "$0")/.."

python=$(command -v python || command -v python3 || true)
if [[ -z "$python" ]]; then
    echo "lint.sh: no python on PATH" >&2
    exit 2
fi
for module in ruff mypy; do
    if ! "$python" -c "import $module" 2>/dev/null; then
        echo "lint.sh: $module is not installed for $python (pip install -e '.[dev]')" >&2
        exit 2
    fi
done

status=0
echo "== ruff check ."
"$python" -m ruff check . || status=1
echo "== mypy"
"$python" -m mypy || status=1
if [[ $status -ne 0 ]]; then
    echo "lint.sh: findings above" >&2
fi
exit $status
