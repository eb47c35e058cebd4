#!/usr/bin/env bash
# `make test`'s check of deploy/prometheus and deploy/grafana (`make promtool-test` alone):
#   - `promtool check rules` on alerts.yml and `promtool test rules` on alerts.test.yml;
#   - every alert in alerts.yml has a test where it fires and one where it must not (`exp_alerts: []`);
#   - every metric the rules and the dashboard name is one in docs/operations.md's metrics table (what the
#     service serves), so neither can drift to a name /metrics does not have.
# promtool comes with Debian's `prometheus` package, installed when promtool is missing (without the
# recommended exporters). Its install may start a Prometheus server (systemd, or the init script where
# there is no systemd and policy-rc.d allows it): it is stopped and disabled, only promtool is wanted.
# Prints promtool's output only when something fails; the last line is the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
RULES=deploy/prometheus/alerts.yml
TESTS=deploy/prometheus/alerts.test.yml
DASHBOARD=deploy/grafana/paywarden.json
DOC=docs/operations.md

if ! command -v promtool >/dev/null; then
  echo "installing Debian packages: prometheus (for promtool)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/prometheus ]; then
    /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    update-rc.d prometheus disable >/dev/null 2>&1 || true
  fi
fi

fail() { echo "promtool-test: FAILED: $*"; exit 1; }

out=$(promtool check rules "$RULES" 2>&1) || { echo "$out"; fail "promtool check rules $RULES"; }
out=$(cd "$(dirname "$TESTS")" && promtool test rules "$(basename "$TESTS")" 2>&1) || { echo "$out"; fail "promtool test rules $TESTS"; }

alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\) *$/\1/p' "$RULES")
[ -n "$alerts" ] || fail "no alert found in $RULES"
untested=""
for alert in $alerts; do
  # After each `alertname: X` line comes its `exp_alerts:`, a list (fires) or [] (must not fire).
  expectations=$(grep -A1 -E "^ *alertname: $alert *$" "$TESTS" | grep -E '^ *exp_alerts:' || true)
  grep -qE 'exp_alerts: *$' <<<"$expectations" || untested="$untested $alert(firing)"
  grep -qE 'exp_alerts: *\[\] *$' <<<"$expectations" || untested="$untested $alert(not-firing)"
done
[ -z "$untested" ] || fail "alerts without a test in $TESTS:$untested"

missing=""
for metric in $(grep -ohE 'paywarden_[a-z0-9_]+' "$RULES" "$DASHBOARD" | sed -E 's/_(bucket|sum|count)$//' | sort -u); do
  grep -qE "\`$metric[\`{]" "$DOC" || missing="$missing $metric"
done
[ -z "$missing" ] || fail "metrics that are not in $DOC's metrics table:$missing"

echo "promtool-test: $(wc -w <<<"$alerts") alerts checked and unit-tested (firing and not), \
$(grep -ohE 'paywarden_[a-z0-9_]+' "$RULES" "$DASHBOARD" | sed -E 's/_(bucket|sum|count)$//' | sort -u | wc -l) metric names known"
