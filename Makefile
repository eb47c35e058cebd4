# Paywarden. `make run` and `make test` work on a fresh Debian machine as root: each installs the
# Debian packages it needs (only when missing) and builds.

SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

DEBIAN_PACKAGES := softhsm2 libnss3 libp11-kit-dev libssl-dev libsqlite3-dev openssl pkg-config gcc make
PAYWARDEN_HOME ?= $(CURDIR)/Keys
export PAYWARDEN_HOME
HSM_BENCH_SOURCE ?= $(CURDIR)/../shared/tools/hsm-bench
HSM_BENCH := $(CURDIR)/.build/hsm-bench/hsm_bench
RAW_PKCS11_BENCH := $(CURDIR)/.build/raw-pkcs11-bench/raw_pkcs11_bench

.PHONY: deps deps-test install-packages build build-tour run try test promtool-test contract-test bench loadtest image image-test soak fuzz format lint clean

# The tests also start a throw-away PostgreSQL cluster (as the unprivileged postgres user), HAProxy,
# p11-kit's remoting in front of SoftHSM, and tpm2-pkcs11 on a software TPM.
TEST_PACKAGES := postgresql haproxy p11-kit p11-kit-modules \
  libtpm2-pkcs11-1 libtpm2-pkcs11-tools swtpm swtpm-tools tpm2-abrmd libtss2-tcti-tabrmd0 tpm2-tools dbus

# Installs what is missing; does nothing (and needs no network) when all is there.
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEBIAN_PACKAGES)"

deps-test:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEBIAN_PACKAGES) $(TEST_PACKAGES)"

install-packages:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	swift build -c release --product paywarden

# The tour's own binary: the stand-ins for Apple and a processor, and the steps (most of its
# modules are the service's, built once for both).
build-tour: build
	swift build -c release --product paywarden-tour

# The service on the local development token (created once under $(PAYWARDEN_HOME), with a
# development API key) and its sandbox (a development PKI, the only trust of this configuration,
# and a merchant it certified), listening on PAYWARDEN_LISTEN (default 127.0.0.1:8080); no balancer
# in front, so Ctrl-C stops it without the shutdown drain unless PAYWARDEN_SHUTDOWN_DRAIN_SECONDS says.
# BACKEND=nss puts the token in NSS softokn, a second PKCS#11 implementation, instead of SoftHSM.
BACKEND ?= softhsm
# API_KEYS: more PAYWARDEN_API_KEYS entries beside the development key (`make run API_KEYS=…`).
run: build
	@.build/release/paywarden dev-hsm init --backend $(BACKEND) >/dev/null
	@set -a; . "$(PAYWARDEN_HOME)/$(BACKEND)/env"; set +a; \
	  .build/release/paywarden dev-hsm sandbox --backend $(BACKEND) >/dev/null
	@set -a; . "$(PAYWARDEN_HOME)/$(BACKEND)/env"; set +a; \
	  if [ -n "$(API_KEYS)" ]; then export PAYWARDEN_API_KEYS="$$PAYWARDEN_API_KEYS,$(API_KEYS)"; fi; \
	  .build/release/paywarden hsm status; \
	  listen=$${PAYWARDEN_LISTEN:-127.0.0.1:8080}; env="$(PAYWARDEN_HOME)/$(BACKEND)/env"; \
	  echo; echo "Serving on http://$$listen; the sandbox merchant is merchant.com.example.sandbox (paywarden dev-hsm sandbox)."; \
	  echo "In another shell:  make try    (the guided tour), or by hand:"; \
	  echo "  set -a; . $$env; set +a"; \
	  echo "  .build/release/paywarden dev-hsm sample-token --merchant-id merchant.com.example.sandbox > token.json"; \
	  echo "  curl -H @$(PAYWARDEN_HOME)/$(BACKEND)/dev-api-key.header --data @token.json \\"; \
	  echo "    http://$$listen/v1/payment-tokens/decrypt"; \
	  echo "This development configuration trusts only the development PKI: no real Apple Pay token decrypts here."; echo; \
	  export PAYWARDEN_SHUTDOWN_DRAIN_SECONDS=$${PAYWARDEN_SHUTDOWN_DRAIN_SECONDS:-0}; \
	  exec .build/release/paywarden serve

# The guided tour (scripts/try.sh): uses the service `make run` serves, or starts one and stops it.
try: build-tour
	BACKEND=$(BACKEND) bash scripts/try.sh .build/release

# Every suite on SoftHSM, then the suites that touch an HSM again on NSS softokn, a second
# PKCS#11 implementation (PAYWARDEN_TEST_HSM=nss). Left out of the second run: the suites that
# take a SoftHSM token away by its files or fault it through a module forwarding to SoftHSM, and
# the rolling restart behind HAProxy, whose subject is the process's lifecycle, not the HSM.
NSS_SUITES := ^(PKCS11Tests|ApplePayTests|KeyCustodyTests|AdminTests|VaultTests|OutboundTLSTests|MerchantTokensTests|ProcessorRelaysTests|ServerTests|ConfigurationTests)\.
SOFTHSM_ONLY := HSMTests/FaultInjectingModule|CnpRelayTests/theUpstreamsOwnTokenPassesThroughOnAnHSMThatCannotRunTheVault|HSMTests/SessionKeyCopies|LoginPacingTests|OpenAPIVaultTests|ResilienceTests|HSMFaultTests|HSMCapabilityGapTests|StuckHSMCallTests|GracefulShutdownTests|P11KitRemotingTests|TPM2PKCS11Tests|AuditChainTests/aCleanLogOfAHundredThousandLines

test: deps-test
	swift build --build-tests
	swift test --no-parallel
	PAYWARDEN_TEST_HSM=nss swift test --skip-build --no-parallel --filter '$(NSS_SUITES)' --skip '$(SOFTHSM_ONLY)'
	TRY_ISOLATED=1 bash scripts/try.sh .build/debug
	TRY_ISOLATED=1 BACKEND=nss bash scripts/try.sh .build/debug
	bash scripts/promtool-test.sh
	bash scripts/contract-test.sh

# The Prometheus alert rules in deploy/prometheus: promtool's check and every alert's unit tests.
promtool-test:
	bash scripts/promtool-test.sh

# schemathesis (pinned, in a virtualenv under .build) against openapi.json and a real server.
contract-test: deps-test
	swift build --build-tests
	bash scripts/contract-test.sh

$(HSM_BENCH): $(HSM_BENCH_SOURCE)/hsm_bench.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wno-deprecated-declarations $$(pkg-config --cflags p11-kit-1) -o $@ $< $$(pkg-config --libs p11-kit-1) -lcrypto -ldl -lpthread

$(RAW_PKCS11_BENCH): scripts/raw_pkcs11_bench.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra $$(pkg-config --cflags p11-kit-1) -o $@ $< -ldl -lpthread

# PKCS#11 layer throughput next to the raw module's from the same run; then the engine on SoftHSM
# and NSS softokn, each against its own raw figures; then the engine with 1 ms added to every
# PKCS#11 call (a network HSM) against the same run without; then what sealing the audit trail costs.
bench: deps $(HSM_BENCH) $(RAW_PKCS11_BENCH)
	swift build -c release --product paywarden-bench
	swift build -c release --product PaywardenFaultInjectingPKCS11
	HSM_BENCH=$(HSM_BENCH) .build/release/paywarden-bench
	RAW_PKCS11_BENCH=$(RAW_PKCS11_BENCH) .build/release/paywarden-bench backends
	.build/release/paywarden-bench latency
	.build/release/paywarden-bench audit

# The service under load on loopback: tokens/s, latency, errors and RSS next to the raw HSM rate, in
# both HSM dispatches, and the PyPI applepay library on uvicorn under the same load (scripts/loadtest.sh).
loadtest: deps-test $(HSM_BENCH)
	@command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk curl >/dev/null; }
	@# The peer (scripts/applepay_peer.py) is installed into a virtual environment at run time.
	@python3 -c 'import venv, ensurepip' 2>/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; }
	swift build -c release --product paywarden
	swift build -c release --product paywarden-bench
	swift build -c release --product PaywardenFaultInjectingPKCS11
	HSM_BENCH=$(HSM_BENCH) bash scripts/loadtest.sh

# An OCI image of the service from Debian bookworm's packages (debootstrap + buildah, no registry):
# the stripped release binary, the Swift runtime libraries it links, the runtime packages of
# deploy/image/packages, uid 10001, `paywarden serve` on 0.0.0.0:8080, the volume /var/lib/paywarden;
# tagged localhost/paywarden:<git short hash> and :latest (scripts/image.sh; the root file system is
# cached under .build/image, an unchanged image is not committed again).
IMAGE_PACKAGES := debootstrap buildah
image: build
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(IMAGE_PACKAGES)"
	bash scripts/image.sh .build/release/paywarden

# The image under podman against a SoftHSM development token and SQLite in a volume: /readyz, a
# decrypt, SIGTERM's exit status, the image's size (scripts/image-test.sh; not part of `make test`).
image-test: image
	@$(MAKE) --no-print-directory install-packages PACKAGES="podman runc curl"
	bash scripts/image-test.sh .build/release/paywarden

# 1,000,000 decryptions through HTTP: RSS every 100,000, its growth without the replay ledger,
# module recycles and errors (DATABASE=sqlite, the default, or memory; SOAK_TOKENS, SOAK_BATCH).
soak: deps
	@command -v wrk >/dev/null && command -v curl >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk curl >/dev/null; }
	swift build -c release --product paywarden
	swift build -c release --product paywarden-bench
	bash scripts/soak.sh

# libFuzzer on every parser of outside bytes, FUZZ_SECONDS (default 120) per target: executions,
# coverage, corpus and crashes per target (scripts/fuzz.sh; FUZZ_TARGETS picks some).
fuzz: deps
	bash scripts/fuzz.sh

# The one style: .swift-format at the root (swift-format ships with the toolchain).
format:
	swift-format format -i -r --parallel Sources Tests Fuzz Package.swift

lint:
	swift-format lint -r --strict --parallel Sources Tests Fuzz Package.swift

clean:
	rm -rf .build .build-fuzz
