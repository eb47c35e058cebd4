// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Paywarden",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "paywarden", targets: ["PaywardenCLI"]),
        .library(name: "PKCS11", targets: ["PKCS11"]),
        .executable(name: "paywarden-bench", targets: ["PaywardenBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // C interop: PKCS#11 module loading and the constants Swift cannot import.
        .systemLibrary(
            name: "CP11Kit",
            path: "CModules/CP11Kit",
            pkgConfig: "p11-kit-1",
            providers: [.apt(["libp11-kit-dev"])]
        ),
        .target(
            name: "CPKCS11",
            dependencies: ["CP11Kit"],
            path: "CModules/CPKCS11",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // Thin shims over OpenSSL's libcrypto where it is the vetted tool (key parsing, OAEP decoding).
        .systemLibrary(
            name: "CLibCrypto",
            path: "CModules/CLibCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "COpenSSLShim",
            dependencies: ["CLibCrypto"],
            path: "CModules/COpenSSLShim"
        ),

        // The PKCS#11 layer: knows nothing of Apple Pay.
        .target(
            name: "PKCS11",
            dependencies: [
                "CPKCS11",
                "COpenSSLShim",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The Apple Pay protocol: token model, signature verification, KDF, AEAD. Decrypts through
        // a small key-operations protocol and knows nothing of PKCS#11.
        .target(
            name: "ApplePay",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Key custody: merchant keys, their certificates and lifecycle, CSRs, audit.
        .target(
            name: "KeyCustody",
            dependencies: [
                "PKCS11",
                "ApplePay",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The HTTP service: decrypt endpoint, API keys, TLS, health, metrics, backpressure.
        .target(
            name: "PaywardenServer",
            dependencies: [
                "ApplePay", "KeyCustody", "PKCS11",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Helpers for tests and benchmarks: temporary SoftHSM tokens.
        .target(
            name: "PKCS11Testing",
            dependencies: ["PKCS11", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "PaywardenCLI",
            dependencies: [
                "PKCS11",
                "KeyCustody",
                "ApplePay",
                "PaywardenServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "PaywardenBench",
            dependencies: [
                "PKCS11", "PKCS11Testing", "ApplePay", "KeyCustody", "PaywardenTestSupport", "PaywardenServer",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The test PKI and token forge: an Apple-like CA chain that certifies Paywarden's keys and
        // signs tokens exactly as Apple does. Test sources, shared by the tests and the benchmarks.
        .target(
            name: "PaywardenTestSupport",
            dependencies: [
                "ApplePay", "KeyCustody", "PKCS11", "PKCS11Testing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tests/PaywardenTestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "KeyCustodyTests",
            dependencies: [
                "KeyCustody", "PKCS11", "PKCS11Testing", "PaywardenTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "ApplePayTests",
            dependencies: [
                "ApplePay", "KeyCustody", "PKCS11", "PKCS11Testing", "PaywardenTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "PaywardenServer", "ApplePay", "KeyCustody", "PKCS11", "PKCS11Testing", "PaywardenTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "PKCS11Tests",
            dependencies: [
                "PKCS11", "PKCS11Testing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
