import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives

struct TokenInspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Verify a token's signature and chain and show what it carries; decrypts nothing.",
        discussion: "Exits 0 only when every verification step passes as of --at (default now), like `openssl verify`."
    )

    @OptionGroup var options: TokenOptions
    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await reportingFailures { settings in
            let bytes = try options.token()
            let at = try options.instant()
            let token = try PaymentToken(json: bytes)
            let verifier = try TokenOptions.verifier(settings)
            let verification = await verifier.verify(token, now: at ?? Date())
            let matchingKey = await Self.matchingKey(token, hsm: try hsmOptions.configuration(settings), settings: settings)

            let formatter = ISO8601DateFormatter()
            let report = Report(
                version: token.version.rawValue, publicKeyHash: token.publicKeyHashBase64, transactionId: token.transactionIDHex,
                applicationData: token.header.applicationData.map(Hex.encode),
                signingTime: verification.signingTime.map(formatter.string(from:)), evaluatedAt: formatter.string(from: at ?? Date()),
                signer: verification.chain.first, chain: verification.chain, signatureAlgorithm: verification.signatureAlgorithm,
                trustAnchors: verifier.anchors.source, verified: verification.passed,
                failure: verification.failure.map { .init(code: $0.code.rawValue, message: $0.message) }, matchingKey: matchingKey
            )
            if options.output.json {
                try printJSON(report)
            } else {
                print("version:          \(report.version)")
                print("publicKeyHash:    \(report.publicKeyHash)")
                print("transactionId:    \(report.transactionId)")
                if let applicationData = report.applicationData { print("applicationData:  \(applicationData)") }
                print("signingTime:      \(report.signingTime ?? "unknown")")
                print("signer:           \(report.signer ?? "unknown")")
                for (index, subject) in report.chain.enumerated().dropFirst() { print("chain[\(index)]:         \(subject)") }
                print("trust anchors:    \(report.trustAnchors)")
                print("matching key:     \(report.matchingKey)")
                print("verdict:          \(report.verified ? "OK: every verification step passed" : "FAILED") as of \(report.evaluatedAt)")
            }
            if let failure = verification.failure { throw CommandFailure(failure) }
        }
    }

    /// The key this token would be decrypted with, or why none is known.
    static func matchingKey(_ token: PaymentToken, hsm configuration: HSMConfiguration, settings: PaywardenSettings) async -> String {
        do throws(any Error) {
            let hsm = try await HSM.open(configuration, probeCapabilities: false)
            let keys: [MerchantKey]
            do throws(any Error) {
                keys = try await AdminDatabase.with(settings) { connection in
                    try await MerchantKeyStore(hsm: hsm, records: connection.keyRecords).list()
                }
            } catch {
                await hsm.close()
                throw error
            }
            await hsm.close()
            let key = keys.first { $0.publicKeyHash == token.publicKeyHashBase64 }
            guard let key else { return "none: no key in the HSM has this publicKeyHash" }
            return "\(key.id) (\(key.merchantID ?? "?"), \(key.state.rawValue))"
        } catch {
            return "unknown: the HSM or the key records could not be read (\(CommandFailure(describing: error).message))"
        }
    }

    struct Report: Encodable {
        struct Failure: Encodable {
            let code, message: String
        }
        let version, publicKeyHash, transactionId: String
        let applicationData, signingTime: String?
        let evaluatedAt: String
        let signer: String?
        let chain: [String]
        let signatureAlgorithm: String?
        let trustAnchors: String
        let verified: Bool
        let failure: Failure?
        let matchingKey: String
    }
}
