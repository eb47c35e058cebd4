import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import PKCS11

struct HSMStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Log in to the token and report its state: module, token, the ECDH and RSA paths in use, and the keys it holds."
    )

    @OptionGroup var hsmOptions: HSMOptions

    @OptionGroup var output: OutputOptions

    func run() async throws {
        try await reportingFailures { settings in
            let hsm = try await HSM.open(hsmOptions.configuration(settings))
            let keys = try await hsm.keys()
            let secretKeys = try await hsm.secretKeys()
            let keyTemplates: String
            do {
                keyTemplates = try await hsm.keyTemplateAdaptation()
            } catch let error as PKCS11Error {
                keyTemplates = "refused: an RSA signing key could not be made (\(error.message)); no identity key can be made here"
            }
            let info = try hsm.module.info()
            await hsm.close()
            let status = Status(
                module: hsm.configuration.modulePath, initReserved: hsm.configuration.initReserved,
                moduleDescription:
                    "\(info.manufacturer) \(info.libraryDescription) \(info.libraryVersion) (Cryptoki \(info.cryptokiVersion))",
                token: hsm.token.label, serial: hsm.token.serialNumber,
                ecdhPath: hsm.capabilities.ecdhPath?.rawValue, rsaDecryptionPath: hsm.capabilities.rsaDecryptionPath?.rawValue,
                cannotDecrypt: HSMPaymentKeys.undecryptableVersions(hsm).map {
                    Status.Gap(
                        version: $0.version.rawValue, operation: $0.gap.operation.rawValue, missing: $0.gap.missing, remedy: $0.gap.remedy)
                },
                vaultGaps: hsm.dataProtectionGaps.map {
                    Status.VaultGap(operation: $0.operation.rawValue, missing: $0.missing, remedy: $0.remedy)
                },
                sessionKeyCopies: hsm.usesSessionKeyCopies,
                dispatch: Status.Dispatch(
                    configured: hsm.dispatchChoice.configured.rawValue, chosen: hsm.dispatchChoice.chosen.rawValue,
                    roundTripMicroseconds: hsm.dispatchChoice.roundTripMicroseconds,
                    thresholdMicroseconds: hsm.dispatchChoice.thresholdMicroseconds,
                    sampleMicroseconds: hsm.dispatchChoice.sampleMicroseconds,
                    summary: hsm.dispatchChoice.summary),
                rsaSigningPath: hsm.capabilities.rsaSigningPath?.rawValue,
                dataKeyWrapPath: hsm.capabilities.dataKeyWrapPath?.rawValue, aesGCM: hsm.capabilities.aesGCM,
                hmacSHA256: hsm.capabilities.hmacSHA256, rsaPSS: hsm.capabilities.rsaPSS,
                identityTLS: hsm.capabilities.rsaPSS ? ["TLS 1.2", "TLS 1.3"] : ["TLS 1.2"],
                unknownAttributes: hsm.capabilities.unknownAttributes.map(\.description).sorted(), keyTemplates: keyTemplates,
                probe: hsm.capabilities.report,
                p384ECDHPath: hsm.capabilities.p384ECDHPath?.rawValue,
                usageInformationSenderKey: SenderKeyCustody.forNewKeys(hsm.capabilities).map { "\($0)" },
                keys: keys.map {
                    Status.Key(
                        id: $0.id.hex, label: $0.label, algorithm: $0.algorithm.rawValue,
                        sensitive: $0.isSensitive, extractable: $0.isExtractable)
                },
                secretKeys: secretKeys.map {
                    Status.Key(
                        id: $0.id.hex, label: $0.label, algorithm: $0.kind.rawValue, sensitive: $0.isSensitive,
                        extractable: $0.isExtractable)
                }
            )
            if output.json {
                try printJSON(status)
            } else {
                print("module:     \(status.module) — \(status.moduleDescription)")
                if let arguments = status.initReserved { print("init args:  \(arguments)") }
                print("token:      \(status.token) (serial \(status.serial)), logged in")
                print("ECDH path:  \(status.ecdhPath ?? "none: EC_v1 unavailable")")
                print("RSA path:   \(status.rsaDecryptionPath ?? "none: RSA_v1 unavailable")")
                for gap in status.cannotDecrypt {
                    print("cannot decrypt \(gap.version): \(gap.operation): \(gap.missing); no retry helps: \(gap.remedy)")
                }
                let copies =
                    status.sessionKeyCopies ? "decryption uses session copies of the token keys" : "off: decryption uses the token keys"
                print("key copies: \(copies)")
                print("dispatch:   \(status.dispatch.summary)")
                let samples = status.dispatch.sampleMicroseconds.map { String(format: "%.1f", $0) }.joined(separator: " ")
                print("            round trips (µs, fastest first): \(samples)")
                print("RSA signs:  \(status.rsaSigningPath ?? "none: no RSA identity or upstream client key can be used")")
                print("data keys:  \(status.dataKeyWrapPath ?? "none: neither AES key wrap with padding nor AES-GCM")")
                for gap in status.vaultGaps {
                    print("vault:      cannot run: \(gap.operation): \(gap.missing); no retry helps: \(gap.remedy)")
                }
                let secretOperations = [("AES-GCM", status.aesGCM), ("HMAC-SHA256", status.hmacSHA256), ("RSA-PSS", status.rsaPSS)]
                print("operations: " + secretOperations.map { "\($0.0) \($0.1 ? "yes" : "no")" }.joined(separator: ", "))
                let tls = status.identityTLS.joined(separator: " and ")
                let why = status.rsaPSS ? "" : " (TLS 1.3 needs RSA-PSS signatures, which this HSM does not make)"
                print("identity:   mutual TLS to Apple with \(tls)\(why)")
                if !status.unknownAttributes.isEmpty {
                    print("attributes: unknown to the token, left out of templates: \(status.unknownAttributes.joined(separator: ", "))")
                }
                print("templates:  \(status.keyTemplates)")
                let senderKey =
                    status.usageInformationSenderKey.map { "new P-384 keys \($0)" } ?? "unavailable (no P-384 ECDH, no data-key wrapping)"
                print("usage info: sender key \(senderKey)")
                for line in status.probe { print("  probe:    \(line)") }
                print("keys:       \(keys.count)")
                for key in status.keys { print("  \(key.id)  \(key.algorithm)  \(key.label)") }
                print("secret keys: \(status.secretKeys.count)")
                for key in status.secretKeys { print("  \(key.id)  \(key.algorithm)  \(key.label)") }
            }
        }
    }

    struct Status: Encodable {
        struct Key: Encodable {
            let id, label, algorithm: String
            let sensitive, extractable: Bool
        }
        /// A token version this HSM can never decrypt, what it lacks and what would provide it.
        struct Gap: Encodable {
            let version, operation, missing, remedy: String
        }
        /// An operation the vault needs that this HSM can never run, and what would provide it.
        struct VaultGap: Encodable {
            let operation, missing, remedy: String
        }
        struct Dispatch: Encodable {
            let configured, chosen: String
            let roundTripMicroseconds, thresholdMicroseconds: Double
            /// Every round trip measured, fastest first.
            let sampleMicroseconds: [Double]
            let summary: String
        }
        let module: String
        /// `C_Initialize`'s `pReserved` string, when one is set (it names no secret).
        let initReserved: String?
        let moduleDescription, token, serial: String
        let ecdhPath, rsaDecryptionPath: String?
        /// Token versions refused as `hsm_capability_missing` on this HSM.
        let cannotDecrypt: [Gap]
        /// What the vault needs and this HSM lacks; the vault's commands and routes are then refused
        /// as `hsm_capability_missing`.
        let vaultGaps: [VaultGap]
        let sessionKeyCopies: Bool
        /// Where `serve` would run HSM calls with these settings (``HSMDispatch``), and why.
        let dispatch: Dispatch
        /// How RSA CSRs and TLS 1.2 handshakes are signed (``RSASigningPath``), nil when they cannot be.
        let rsaSigningPath: String?
        let dataKeyWrapPath: String?
        let aesGCM, hmacSHA256, rsaPSS: Bool
        /// The TLS versions a merchant identity key in this HSM can authenticate with.
        let identityTLS: [String]
        /// Optional attributes the token does not know, which Paywarden's templates leave out.
        let unknownAttributes: [String]
        /// How the module takes key templates (`as specified`, or the adaptation to its rules).
        let keyTemplates: String
        let probe: [String]
        /// The P-384 ECDH path for usage information's HPKE sender keys, when the token has one.
        let p384ECDHPath: String?
        /// Where new usage-information sender keys go: "in the HSM" or "wrapped by an HSM key".
        let usageInformationSenderKey: String?
        let keys: [Key]
        let secretKeys: [Key]
    }
}
