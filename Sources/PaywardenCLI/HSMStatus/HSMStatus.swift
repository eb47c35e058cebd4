import ArgumentParser
import Foundation
import PKCS11

struct HSMStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Log in to the token and report its state: module, token, the ECDH and RSA paths in use, and the keys it holds."
    )

    @OptionGroup var hsmOptions: HSMOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let hsm = try await HSM.open(hsmOptions.configuration())
            let keys = try await hsm.keys()
            let info = try hsm.module.info()
            await hsm.close()
            let status = Status(
                module: hsm.configuration.modulePath,
                moduleDescription: "\(info.manufacturer) \(info.libraryDescription) \(info.libraryVersion) (Cryptoki \(info.cryptokiVersion))",
                token: hsm.token.label, serial: hsm.token.serialNumber,
                ecdhPath: hsm.capabilities.ecdhPath?.rawValue, rsaDecryptionPath: hsm.capabilities.rsaDecryptionPath?.rawValue,
                sessionKeyCopies: hsm.usesSessionKeyCopies,
                probe: hsm.capabilities.report,
                keys: keys.map { Status.Key(id: $0.id.hex, label: $0.label, algorithm: $0.algorithm.rawValue,
                                            sensitive: $0.isSensitive, extractable: $0.isExtractable) }
            )
            if json {
                try printJSON(status)
            } else {
                print("module:     \(status.module) — \(status.moduleDescription)")
                print("token:      \(status.token) (serial \(status.serial)), logged in")
                print("ECDH path:  \(status.ecdhPath ?? "none: EC_v1 unavailable")")
                print("RSA path:   \(status.rsaDecryptionPath ?? "none: RSA_v1 unavailable")")
                print("key copies: \(status.sessionKeyCopies ? "decryption uses session copies of the token keys" : "off: decryption uses the token keys")")
                for line in status.probe { print("  probe:    \(line)") }
                print("keys:       \(keys.count)")
                for key in status.keys { print("  \(key.id)  \(key.algorithm)  \(key.label)") }
            }
        }
    }

    struct Status: Encodable {
        struct Key: Encodable {
            let id, label, algorithm: String
            let sensitive, extractable: Bool
        }
        let module, moduleDescription, token, serial: String
        let ecdhPath, rsaDecryptionPath: String?
        let sessionKeyCopies: Bool
        let probe: [String]
        let keys: [Key]
    }
}
