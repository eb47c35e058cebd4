import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import PKCS11
import PaywardenServices
import Vault

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
            // Card data read outside the service, with no replay ledger and, with --at, any time
            // after the token was made: every run is audited, and nothing is printed unless its
            // audit line was written.
            var audit = CardDataAudit(log: PaywardenHome.auditTrail(settings), revealed: reveal, at: at)
            let hsm = try await HSM.open(hsmOptions.configuration(settings))
            audit.log = await PaywardenHome.sealed(audit.log, hsm: hsm)
            let result: DecryptedPaymentToken
            do {
                let keys = HSMPaymentKeys(hsm: hsm)
                // One read of the keys: the map the decrypter uses, and the merchants the audit names.
                let inventory = try await AdminDatabase.with(settings) { connection in
                    try await MerchantKeyStore(hsm: hsm, records: connection.keyRecords).inventory()
                }
                keys.reload(from: inventory)
                let decrypter = PaymentTokenDecrypter(verifier: verifier, directory: keys, operations: keys)
                do throws(PaymentTokenError) {
                    result = try await decrypter.decrypt(json: bytes, at: at)
                } catch {
                    try await audit.refused(error.code.rawValue)
                    throw error
                }
                let merchant = inventory.keys.first { $0.id.hex == result.keyID }?.merchantID
                try await audit.decrypted(result, merchantID: merchant, hsm: hsm)
                await PaywardenHome.close(audit.log)
                await hsm.close()
            } catch {
                await PaywardenHome.close(audit.log)
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
            paymentData = PaymentDataMasking.masked(result.paymentData) ?? Array("{}".utf8)
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
