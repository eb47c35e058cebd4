// swift-tools-version: 6.1
import PackageDescription

// Module layout and dependency rules: docs/architecture.md.

let crypto = Target.Dependency.product(name: "Crypto", package: "swift-crypto")
let cryptoExtras = Target.Dependency.product(name: "_CryptoExtras", package: "swift-crypto")
let asn1 = Target.Dependency.product(name: "SwiftASN1", package: "swift-asn1")
let x509 = Target.Dependency.product(name: "X509", package: "swift-certificates")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let nioCore = Target.Dependency.product(name: "NIOCore", package: "swift-nio")
let nioPosix = Target.Dependency.product(name: "NIOPosix", package: "swift-nio")
let nioHTTP1 = Target.Dependency.product(name: "NIOHTTP1", package: "swift-nio")
let nioSSL = Target.Dependency.product(name: "NIOSSL", package: "swift-nio-ssl")
let asyncHTTPClient = Target.Dependency.product(name: "AsyncHTTPClient", package: "async-http-client")
let serviceLifecycle = Target.Dependency.product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let httpTypes = Target.Dependency.product(name: "HTTPTypes", package: "swift-http-types")
let tracing = Target.Dependency.product(name: "Tracing", package: "swift-distributed-tracing")
let otel = Target.Dependency.product(name: "OTel", package: "swift-otel")

let package = Package(
    name: "Paywarden",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "paywarden", targets: ["PaywardenCLI"]),
        .executable(name: "paywarden-bench", targets: ["PaywardenBench"]),
        .executable(name: "paywarden-tour", targets: ["PaywardenTour"]),
        .library(name: "PKCS11", targets: ["PKCS11"]),
        .library(name: "PaywardenTesting", targets: ["PaywardenTesting"]),
        // Test-only: the fault-injecting PKCS#11 module, a shared object that tests dlopen
        // (PaywardenHSMTesting's `FaultInjectingPKCS11` finds it beside the test bundle).
        .library(name: "PaywardenFaultInjectingPKCS11", type: .dynamic, targets: ["CFaultInjectingPKCS11"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // Traces only, over OTLP/HTTP: the OTLPHTTP trait alone keeps gRPC (and its dependencies) out of the build.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // C interop: PKCS#11 module loading and the constants Swift cannot import.
        .systemLibrary(name: "CP11Kit", path: "CModules/CP11Kit", pkgConfig: "p11-kit-1", providers: [.apt(["libp11-kit-dev"])]),
        .target(name: "CPKCS11", dependencies: ["CP11Kit"], path: "CModules/CPKCS11", linkerSettings: [.linkedLibrary("dl")]),
        // Thin shims over OpenSSL's libcrypto where it is the vetted tool (key parsing, OAEP decoding, RFC 5649).
        .systemLibrary(name: "CLibCrypto", path: "CModules/CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "COpenSSLShim", dependencies: ["CLibCrypto"], path: "CModules/COpenSSLShim"),
        // Test-only: a PKCS#11 module that forwards to SoftHSM and fails, hangs or slows down on command.
        // Nothing links it: it is loaded by path, like any vendor's module.
        .target(
            name: "CFaultInjectingPKCS11", dependencies: ["CP11Kit"], path: "CModules/CFaultInjectingPKCS11",
            linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),

        // The key-file shim's fuzzing body: called only by the libFuzzer entry that scripts/fuzz.sh
        // builds with clang and by FuzzCorpusTests, which replays the corpus (no product links it).
        .target(name: "CShimFuzzing", dependencies: ["COpenSSLShim"], path: "Fuzz/ShimFuzzing"),

        // Below every module: value types with no behaviour beyond encoding (hex, masked secrets), and
        // the one rule for who may own and read a file holding a secret.
        .target(name: "PaywardenPrimitives"),
        // The PKCS#11 layer: speaks Cryptoki, knows nothing of Apple Pay or of Paywarden's settings.
        .target(name: "PKCS11", dependencies: ["CPKCS11", "COpenSSLShim", "PaywardenPrimitives", crypto, cryptoExtras, logging]),
        // The Apple Pay protocol (a leaf): token model, verification, KDF, AEAD; decrypts through
        // the `MerchantKeyOperations` protocol and never learns what an HSM is.
        .target(name: "ApplePay", dependencies: ["PaywardenPrimitives", crypto, cryptoExtras, asn1, x509]),
        // Key custody: merchant keys, their certificates and lifecycle, CSRs, audit.
        .target(
            name: "KeyCustody",
            dependencies: ["PKCS11", "ApplePay", "PaywardenPrimitives", "PaywardenStorage", crypto, asn1, x509, logging]),
        // The only reader of PAYWARDEN_* and the configuration file: plain values for everyone else.
        .target(
            name: "PaywardenConfiguration",
            dependencies: [
                "PaywardenPrimitives", .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // Storage: the stores as protocols with their records and an in-memory implementation (a
        // leaf), the SQL both engines run, and one driver module per engine.
        .target(name: "PaywardenStorage", dependencies: ["PaywardenPrimitives"]),
        .target(name: "PaywardenStorageSQL", dependencies: ["PaywardenStorage", "PaywardenPrimitives"]),
        .target(
            name: "PaywardenStorageSQLite",
            dependencies: ["PaywardenStorage", "PaywardenStorageSQL", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(
            name: "PaywardenStoragePostgres",
            dependencies: [
                "PaywardenStorage", "PaywardenStorageSQL", "PaywardenPrimitives", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"), nioCore, nioSSL, serviceLifecycle, logging,
            ]
        ),
        // The vault: registration IDs, high-value tokens and the envelope encryption of both under
        // key-encrypting keys in the HSM. Speaks to the stores' protocols, never to a driver.
        .target(
            name: "Vault", dependencies: ["PKCS11", "ApplePay", "PaywardenStorage", "PaywardenPrimitives", crypto, logging]),
        // Apple's servers over mutual TLS signed by the HSM-held identity key: merchant-token events,
        // unlink, metadata updates and payment sessions, behind a host allow-list (docs/apple-pay.md, "Apple's hosts").
        .target(
            name: "OutboundTLS",
            dependencies: [
                "PKCS11", "KeyCustody", "PaywardenPrimitives", crypto, asn1, x509, logging, nioCore, nioHTTP1, nioSSL, asyncHTTPClient,
                tracing,
            ]
        ),
        // Processor message formats (a leaf): cnpAPI, MercuryPay and Radial models, a strict XML parser.
        .target(name: "ProcessorMessages", dependencies: ["PaywardenPrimitives"]),
        // The database the settings name, opened on its driver (SQLite or PostgreSQL) with the services
        // it needs while used, and the copy and comparison between two of them (`paywarden database`).
        .target(
            name: "PaywardenDatabase",
            dependencies: [
                "PaywardenStorage", "PaywardenStorageSQL", "PaywardenStorageSQLite", "PaywardenStoragePostgres",
                "PaywardenConfiguration", serviceLifecycle, logging, crypto,
            ]
        ),
        // What the HTTP service and the admin commands share, with no HTTP server in it: decryption,
        // the vault's service, the HSM's and the database's health, the stable error codes, API keys,
        // metrics, the operator's advice, the decrypt response's body.
        .target(
            name: "PaywardenServices",
            dependencies: [
                "ApplePay", "KeyCustody", "PKCS11", "PaywardenConfiguration", "PaywardenPrimitives", "PaywardenStorage", "Vault",
                "OutboundTLS",
                .product(name: "Prometheus", package: "swift-prometheus"), httpTypes, nioCore, nioSSL, serviceLifecycle, logging,
                crypto, tracing, otel,
            ]
        ),
        // The merchant-token outbox and the calls to Apple (events, unlink, metadata, payment
        // sessions) through MerchantTokenGateway, over the vault and the event store.
        .target(
            name: "MerchantTokens",
            dependencies: [
                "PaywardenServices", "Vault", "KeyCustody", "OutboundTLS", "PaywardenConfiguration", "PaywardenStorage",
                "PaywardenPrimitives", nioSSL,
                nioCore, serviceLifecycle, logging, "ApplePay", "PKCS11", crypto, asyncHTTPClient,
            ]
        ),
        // The processor relays' orchestration: a client's message in, the vault's card data in its
        // place, the upstream's reply back with the card data masked.
        .target(
            name: "ProcessorRelays",
            dependencies: [
                "PaywardenServices", "ApplePay", "Vault", "KeyCustody", "PKCS11", "OutboundTLS", "ProcessorMessages",
                "PaywardenConfiguration", "PaywardenPrimitives", "PaywardenStorage", httpTypes, asyncHTTPClient, nioCore, nioHTTP1,
                nioPosix, nioSSL, serviceLifecycle, logging, tracing,
            ]
        ),
        // The HTTP service (routes, controllers, middleware) and the composition root.
        .target(
            name: "PaywardenServer",
            dependencies: [
                "PaywardenServices", "MerchantTokens", "ProcessorRelays", "ApplePay", "KeyCustody", "PKCS11", "PaywardenConfiguration",
                "PaywardenStorage", "PaywardenDatabase", "Vault", "ProcessorMessages", "OutboundTLS", "PaywardenPrimitives",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                httpTypes, nioSSL, nioCore, nioPosix, serviceLifecycle, logging, tracing,
            ]
        ),
        // The admin commands: keys, API keys, certificates, the vault, merchant tokens, the database,
        // the development token. They run on the domain modules and do not import the HTTP server.
        .target(
            name: "PaywardenAdmin",
            dependencies: [
                "PKCS11", "KeyCustody", "ApplePay", "PaywardenServices", "MerchantTokens", "PaywardenConfiguration", "PaywardenPrimitives",
                "PaywardenStorage", "PaywardenDatabase", "PaywardenStorageSQL", "PaywardenStorageSQLite", "Vault", "OutboundTLS",
                "PaywardenSandbox",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                logging, crypto,
            ]
        ),
        // The `paywarden` executable: the admin commands, and `serve` and `config` (which checks
        // what `serve` would refuse), which need the server.
        .executableTarget(
            name: "PaywardenCLI",
            dependencies: [
                "PaywardenAdmin", "PaywardenServer", "PaywardenServices", "PaywardenConfiguration",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), logging,
            ]
        ),
        // The development PKI and sample tokens of `paywarden dev-hsm sandbox|sample-token` (a sandbox
        // merchant certified by a PKI only a development configuration trusts), shared with the tests.
        .target(
            name: "PaywardenSandbox",
            dependencies: ["ApplePay", "KeyCustody", "PaywardenConfiguration", "PaywardenPrimitives", crypto, cryptoExtras, asn1, x509]
        ),
        // What the PKCS#11 tests need and nothing above PKCS11: SoftHSM and NSS test tokens, SoftHSM
        // behind p11-kit's remoting, tpm2-pkcs11 on a software TPM, the fault-injecting module's
        // controls, the resources a test releases, and the real vectors' location.
        .target(name: "PaywardenHSMTesting", dependencies: ["PKCS11", "PaywardenPrimitives", logging]),
        // What tests and benchmarks share above that (which it re-exports): the test PKI and token
        // forge, a software `MerchantKeyOperations`, a `withServer {}` harness that always shuts
        // down, and stand-ins for Apple's gateway and the processors (real mutual TLS on loopback).
        .target(
            name: "PaywardenTesting",
            dependencies: [
                "PaywardenHSMTesting", "ApplePay", "KeyCustody", "PKCS11", "PaywardenServer", "PaywardenServices", "MerchantTokens",
                "ProcessorRelays",
                "PaywardenConfiguration", "PaywardenPrimitives", "PaywardenSandbox", "PaywardenStorage", "PaywardenDatabase",
                "PaywardenStorageSQL", "PaywardenStorageSQLite", "PaywardenStoragePostgres", "Vault", "ProcessorMessages",
                "OutboundTLS", crypto, cryptoExtras, asn1, x509, logging, asyncHTTPClient, nioCore, nioPosix, nioHTTP1, nioSSL,
                serviceLifecycle,
            ]
        ),
        // The Swift Testing trait that releases what a test opened; test targets only.
        .target(name: "PaywardenTestTraits", dependencies: ["PaywardenHSMTesting"]),
        .executableTarget(
            name: "PaywardenBench",
            dependencies: [
                "PKCS11", "ApplePay", "KeyCustody", "PaywardenTesting", "PaywardenServer", "PaywardenServices", "MerchantTokens",
                "ProcessorRelays", "PaywardenConfiguration", "PaywardenPrimitives",
                "PaywardenStorage", "PaywardenStorageSQLite", "PaywardenDatabase", crypto, asyncHTTPClient, nioCore, nioHTTP1, logging,
                serviceLifecycle,
            ]
        ),

        // `make try`: the guided tour on the sandbox, with the stand-ins for Apple and a processor.
        .executableTarget(
            name: "PaywardenTour",
            dependencies: ["PaywardenTesting", "PaywardenSandbox", "PaywardenConfiguration", asyncHTTPClient, nioCore, nioHTTP1]
        ),

        .testTarget(
            name: "PKCS11Tests",
            dependencies: ["PKCS11", "PaywardenHSMTesting", "PaywardenTestTraits", "PaywardenPrimitives", crypto, cryptoExtras]),
        .testTarget(
            name: "ApplePayTests",
            dependencies: [
                "ApplePay", "KeyCustody", "PKCS11", "PaywardenTesting", "PaywardenTestTraits", "PaywardenPrimitives", crypto, cryptoExtras,
            ]
        ),
        // The admin commands as an operator runs them: the `paywarden` binary in a process, its exit
        // status, what it prints and what it changed in the HSM and the database.
        .testTarget(
            name: "AdminTests",
            dependencies: [
                "PaywardenPrimitives",
                "KeyCustody", "PKCS11", "PaywardenStorageSQLite", "PaywardenTesting", "PaywardenTestTraits", "PaywardenSandbox", crypto,
                x509,
            ]
        ),
        .testTarget(
            name: "KeyCustodyTests",
            dependencies: [
                "KeyCustody", "PKCS11", "PaywardenStorage", "PaywardenTesting", "PaywardenTestTraits", crypto, "ApplePay",
                "PaywardenPrimitives",
            ]
        ),
        .testTarget(
            name: "OutboundTLSTests",
            dependencies: [
                "OutboundTLS", "PKCS11", "KeyCustody", "PaywardenTesting", "PaywardenTestTraits", asyncHTTPClient, nioSSL, x509, crypto,
                "ApplePay",
            ]
        ),
        .testTarget(
            name: "ConfigurationTests",
            dependencies: [
                "PaywardenConfiguration", "PaywardenServer", "PaywardenServices", "MerchantTokens", "ProcessorRelays", "PaywardenTesting",
                "PaywardenTestTraits", "PaywardenPrimitives", "PKCS11",
            ]),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "PaywardenPrimitives",
                "PaywardenStorage", "PaywardenStorageSQL", "PaywardenStorageSQLite", "PaywardenStoragePostgres", "PaywardenTesting",
                "PaywardenTestTraits", "PaywardenConfiguration", "PaywardenServer", "PaywardenServices", "MerchantTokens",
                "ProcessorRelays", "PaywardenDatabase", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "ProcessorMessagesTests", dependencies: ["ProcessorMessages"], resources: [.copy("Fixtures")]),
        // Replays Fuzz/corpus and Fuzz/regressions through the fuzzing entry points.
        .testTarget(name: "FuzzCorpusTests", dependencies: ["ApplePay", "ProcessorMessages", "CShimFuzzing"]),
        .testTarget(
            name: "VaultTests",
            dependencies: [
                "Vault", "PKCS11", "ApplePay", "PaywardenStorage", "PaywardenStorageSQL", "PaywardenStorageSQLite", "PaywardenTesting",
                "PaywardenTestTraits",
                "PaywardenPrimitives", crypto,
            ]
        ),
        // The merchant-token outbox with Apple answering in process: no socket.
        .testTarget(
            name: "MerchantTokensTests",
            dependencies: [
                "PaywardenPrimitives",
                "MerchantTokens", "PaywardenServices", "OutboundTLS", "KeyCustody", "Vault", "PKCS11", "PaywardenStorage",
                "PaywardenTesting", "PaywardenTestTraits", "ApplePay", crypto,
            ]
        ),
        // The relays' orchestration with the upstream answering in process: no socket.
        .testTarget(
            name: "ProcessorRelaysTests",
            dependencies: [
                "PaywardenPrimitives",
                "ProcessorRelays", "PaywardenServices", "ProcessorMessages", "ApplePay", "KeyCustody", "Vault", "PKCS11",
                "PaywardenStorage",
                "PaywardenTesting", "PaywardenTestTraits", logging,
            ]
        ),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "PaywardenServer", "PaywardenServices", "MerchantTokens", "ProcessorRelays", "ApplePay", "KeyCustody", "PKCS11",
                "PaywardenTesting", "PaywardenTestTraits", "PaywardenConfiguration", "PaywardenPrimitives", "PaywardenSandbox",
                "Vault", "ProcessorMessages", "PaywardenStorage", "PaywardenStorageSQLite", asyncHTTPClient, nioHTTP1, nioSSL, crypto, x509,
                asn1,
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ]
        ),
    ]
)

// The libFuzzer harnesses exist only for scripts/fuzz.sh (PAYWARDEN_FUZZ=1, built with
// -sanitize=fuzzer,address into .build-fuzz): a plain `swift build` cannot link them.
if Context.environment["PAYWARDEN_FUZZ"] == "1" {
    let harnesses: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzToken", ["ApplePay"]), ("FuzzSignature", ["ApplePay"]), ("FuzzEProtect", ["ApplePay", "ProcessorMessages"]),
        ("FuzzProcessorXML", ["ProcessorMessages"]),
    ]
    package.targets.append(.target(name: "CFuzzDriver", path: "Fuzz/Driver"))
    for harness in harnesses {
        package.targets.append(
            .executableTarget(
                name: harness.name, dependencies: ["CFuzzDriver"] + harness.dependencies, path: "Fuzz/Harnesses/\(harness.name)"))
    }
}

// Package-wide Swift settings, declared once.
for target in package.targets where target.type != .system && target.type != .binary {
    target.swiftSettings = (target.swiftSettings ?? []) + [.swiftLanguageMode(.v6)]
}
