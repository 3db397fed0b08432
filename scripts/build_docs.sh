#!/usr/bin/env bash
# Build the docs site as CI does: the generated references must be current, then `mkdocs build --strict`, which
# fails on any warning (a broken link or anchor, a page missing from mkdocs.yml's nav). Needs the docs extra:
#   pip install '.[docs]'        (or -e; the references are generated from the installed nsysql)
# Output: site/ (ignored by git). Regenerate stale references with: python scripts/make_reference_docs.py
set -euo pipefail
cd "$(dirname "$0")/.."
python scripts/make_reference_docs.py --check
python -m mkdocs build --strict --site-dir "${DOCS_SITE_DIR:-site}"
