#!/usr/bin/env bash
# `make test`'s check of the alert rules: `promtool check rules` on deploy/prometheus/alerts.yml and
# `promtool test rules` on its unit tests (every alert, firing and not). Debian's `prometheus`
# package has promtool; it is installed when missing, without its recommended exporters, and the
# Prometheus server it brings is stopped and disabled where systemd started it: only promtool is wanted.
set -euo pipefail
cd "$(dirname "$0")/../deploy/prometheus"
if ! command -v promtool >/dev/null; then
  echo "installing Debian packages: prometheus (for promtool)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
promtool check rules alerts.yml
promtool test rules alerts.test.yml
# Every metric the rules and the dashboard name is one the service documents (and serves).
missing=""
for metric in $(grep -oh 'paywarden_[a-z_]*' alerts.yml ../grafana/paywarden.json | sed 's/_bucket$//' | sort -u); do
  grep -q "\`$metric[\`{]" ../../docs/operations.md || missing="$missing $metric"
done
[ -z "$missing" ] || { echo "alert rules: metrics not in docs/operations.md's table:$missing"; exit 1; }
echo "alert rules: $(grep -c '^      - alert:' alerts.yml) alerts checked, each one's unit tests passed"
