import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import PKCS11
import PaywardenServer

struct TokenDecrypt: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Verify and decrypt a token with the HSM's keys.",
        discussion: "The PAN and cryptogram are masked unless --reveal; with --reveal the payload is printed exactly as decrypted."
    )

    @OptionGroup var options: TokenOptions

    @Flag(help: "Print the PAN, cryptogram and other secrets in clear.")
    var reveal = false

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await reportingFailures { settings in
            let bytes = try options.token()
            let at = try options.instant()
            let verifier = try TokenOptions.verifier(settings)
            let hsm = try await HSM.open(hsmOptions.configuration(settings))
            let result: DecryptedPaymentToken
            do {
                let keys = HSMPaymentKeys(hsm: hsm)
                _ = try await AdminDatabase.with(settings) { connection in
                    try await keys.reload(from: MerchantKeyStore(hsm: hsm, records: connection.keyRecords))
                }
                let decrypter = PaymentTokenDecrypter(verifier: verifier, directory: keys, operations: keys)
                result = try await decrypter.decrypt(json: bytes, at: at)
                await hsm.close()
            } catch {
                await hsm.close()
                throw error
            }
            print(try Self.render(result, reveal: reveal, json: options.output.json))
        }
    }

    /// The decrypt endpoint's response shape; the payload verbatim with --reveal, masked otherwise.
    static func render(_ result: DecryptedPaymentToken, reveal: Bool, json: Bool) throws -> String {
        let paymentData: [UInt8]
        if reveal {
            paymentData = result.paymentData
        } else {
            let masked = PaymentDataMasking.masked(result.paymentData) ?? [:]
            paymentData = Array(try JSONSerialization.data(withJSONObject: masked, options: [.sortedKeys, .withoutEscapingSlashes]))
        }
        let facts = DecryptedTokenFacts(result)
        if json {
            return String(decoding: try facts.responseBody(paymentData: paymentData), as: UTF8.self)
        }
        return """
            version:                \(facts.token.version)
            transactionId:          \(facts.token.transactionId)
            publicKeyHash:          \(facts.token.publicKeyHash)
            signingTime:            \(facts.token.signingTime)
            key:                    \(facts.key.id)
            merchantIdentifierHash: \(facts.key.merchantIdentifierHash)
            paymentData:            \(String(decoding: paymentData, as: UTF8.self))
            """
    }
}
