#!/usr/bin/env bash
# deploy/prometheus/: the configuration and the rules as promtool checks
# them, and the rules' unit tests (gossipd.rules.test.yml: each alert fires
# on the series it is for and not on a healthy member's).
# Usage: prometheus_rules.sh DEPLOY_PROMETHEUS_DIR
set -euo pipefail
if ! command -v promtool >/dev/null; then
  echo "prometheus_rules.sh: SKIPPED: no promtool (as root: deploy/install-deps.sh --deploy)"
  exit 0
fi
cd "$1"
promtool check config prometheus.yml
promtool check rules gossipd.rules.yml
promtool test rules gossipd.rules.test.yml
