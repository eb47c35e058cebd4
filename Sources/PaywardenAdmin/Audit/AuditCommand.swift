import ArgumentParser
import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration

public struct AuditCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Verify the audit trail, and print the public key an auditor verifies it with.",
        subcommands: [AuditVerify.self, AuditPublicKey.self]
    )
}

struct AuditVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check that no audit line was changed, removed, reordered or inserted, and that no chain was cut.",
        discussion: """
            Reads the files in the order given, oldest first, as one trail (a writer's chain runs on across rotations); \
            without FILE, the home's audit.jsonl after its rotations (audit.jsonl.N … audit.jsonl.1). With the HSM (the \
            default) every line's MAC is checked; with --public-key, no HSM is needed and the signed checkpoints vouch for the \
            lines (a change is then placed between two checkpoints). Prints every problem as FILE:LINE: what; exits 0 only \
            when everything verifies, 1 when something does not. Strict by default: a chain beginning inside the first file \
            (--partial), an unsealed line (--allow-unsealed) and a chain without its final checkpoint, as a running serve's is \
            (--allow-open), fail unless allowed.
            """
    )

    @Argument(help: "Audit files, oldest first.")
    var files: [String] = []

    @Option(
        name: .customLong("public-key"),
        help: "The audit signing key's public key (PEM, from `paywarden audit public-key`): check without the HSM.")
    var publicKey: String?

    @Flag(help: "Chains may begin inside the first file (retention deleted the older ones); reported as notes.")
    var partial = false

    @Flag(name: .customLong("allow-unsealed"), help: "Lines written without the HSM are notes, not failures (read each first).")
    var allowUnsealed = false

    @Flag(name: .customLong("allow-open"), help: "Chains without their final checkpoint (a running serve) are notes, not failures.")
    var allowOpen = false

    @OptionGroup var hsmOptions: HSMOptions

    private var allowances: AuditVerifier.Allowances {
        var allowances: AuditVerifier.Allowances = []
        if partial { allowances.insert(.partialStart) }
        if allowUnsealed { allowances.insert(.unsealed) }
        if allowOpen { allowances.insert(.openChains) }
        return allowances
    }

    func run() async throws {
        try await reportingFailures { settings in
            let files = self.files.isEmpty ? Self.rotation(of: PaywardenHome(settings).auditLog) : self.files
            guard !files.isEmpty else {
                throw CommandFailure(.refused, "there is no audit file at \(PaywardenHome(settings).auditLog); name the files to check")
            }
            let report: AuditVerifier.Report
            if let publicKey {
                let pem: String
                do {
                    pem = try String(contentsOfFile: publicKey, encoding: .utf8)
                } catch {
                    throw CommandFailure(.refused, "cannot read the public key \(publicKey): \(error.localizedDescription)")
                }
                let keys = Self.publicKeys(pem)
                guard !keys.isEmpty else {
                    throw CommandFailure(
                        .refused, "\(publicKey) is not a P-256 public key in PEM; write it with `paywarden audit public-key`")
                }
                var verifier = AuditVerifier(publicKeys: keys)
                verifier.allowances = allowances
                report = try await verifier.verify(files: files)
            } else {
                let hsm = try await HSM.open(hsmOptions.configuration(settings), probeCapabilities: false)
                do {
                    var verifier = try await AuditVerifier.checkingMACs(in: hsm)
                    verifier.allowances = allowances
                    guard verifier.hasHSMKeys else {
                        throw CommandFailure(
                            .misconfiguration,
                            "the HSM holds no audit keys, so it sealed no line of any trail: name the token the trail was written "
                                + "with (\(SettingCatalog.tokenLabel.environmentName)), or verify with --public-key")
                    }
                    report = try await verifier.verify(files: files)
                    await hsm.close()
                } catch {
                    await hsm.close()
                    throw error
                }
            }
            for finding in report.findings { print(finding) }
            let how = publicKey == nil ? "every line's MAC checked in the HSM" : "checkpoints checked with the public key, no MAC"
            let summary =
                "\(report.lines) lines of \(report.writers) writers in \(files.count) files, \(report.checkpoints) checkpoints, "
                + "\(report.unsealed) unsealed; \(how)"
            guard report.verified else {
                print("NOT VERIFIED: \(summary)")
                throw CommandFailure(
                    .refused, "\(report.failures.count) problem(s), the first at \(report.failures[0].file):\(report.failures[0].line)")
            }
            print("verified: \(summary)")
        }
    }

    /// Every P-256 public key of a PEM file (`audit public-key` prints one, or several when
    /// two processes made the audit keys at once); nothing when one of its blocks is not such a key.
    static func publicKeys(_ pem: String) -> [P256.Signing.PublicKey] {
        let end = "-----END PUBLIC KEY-----"
        let blocks = pem.components(separatedBy: end).dropLast().map { $0 + end }
        let keys = blocks.compactMap { try? P256.Signing.PublicKey(pemRepresentation: $0) }
        return keys.count == blocks.count ? keys : []
    }

    /// `path` after its rotations, oldest first: `path.N` … `path.1`, as logrotate numbers them
    /// (compressed ones are not read: name them uncompressed).
    static func rotation(of path: String) -> [String] {
        var rotated: [String] = []
        var number = 1
        while FileManager.default.fileExists(atPath: "\(path).\(number)") {
            rotated.append("\(path).\(number)")
            number += 1
        }
        return rotated.reversed() + (FileManager.default.fileExists(atPath: path) ? [path] : [])
    }
}

struct AuditPublicKey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "public-key",
        abstract: "Print the audit signing key's public key (PEM), for `paywarden audit verify --public-key` without the HSM.",
        discussion: """
            Makes the audit keys in the HSM when it has none. Prints every audit signing key the HSM holds (two processes \
            making the keys at once leave two). Give the auditor the keys through a channel of their own.
            """
    )

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await reportingFailures { settings in
            let hsm = try await HSM.open(hsmOptions.configuration(settings), probeCapabilities: false)
            do {
                _ = try await AuditKeys.open(hsm)
                for (_, publicKey) in try await AuditKeys.signingKeys(hsm) { print(publicKey.pemRepresentation) }
                await hsm.close()
            } catch {
                await hsm.close()
                throw error
            }
        }
    }
}
