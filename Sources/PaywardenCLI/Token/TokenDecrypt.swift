import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import PKCS11

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
        try await reportingFailures {
            let bytes = try options.token()
            let at = try options.instant()
            let verifier = try TokenOptions.verifier()
            let hsm = try await HSM.open(hsmOptions.configuration())
            let result: DecryptedPaymentToken
            do {
                let keys = HSMPaymentKeys(hsm: hsm)
                try await keys.reload(from: MerchantKeyStore(hsm: hsm))
                let decrypter = PaymentTokenDecrypter(verifier: verifier, directory: keys, operations: keys)
                result = try await decrypter.decrypt(json: bytes, at: at)
                await hsm.close()
            } catch {
                await hsm.close()
                throw error
            }
            print(try Self.render(result, reveal: reveal, json: options.json))
        }
    }

    /// The decrypt endpoint's response shape; the payload verbatim with --reveal, masked otherwise.
    static func render(_ result: DecryptedPaymentToken, reveal: Bool, json: Bool) throws -> String {
        let paymentData: String
        if reveal {
            paymentData = String(decoding: result.paymentData, as: UTF8.self)
        } else {
            let masked = PaymentDataMasking.masked(result.paymentData) ?? [:]
            paymentData = String(decoding: try JSONSerialization.data(withJSONObject: masked, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
        }
        let formatter = ISO8601DateFormatter()
        let token = """
            {"version":"\(result.version.rawValue)","transactionId":"\(result.transactionID)","publicKeyHash":"\(result.publicKeyHash)","signingTime":"\(formatter.string(from: result.signingTime))"}
            """
        let key = #"{"id":"\#(result.keyID)","merchantIdentifierHash":"\#(result.merchantIdentifierHash)"}"#
        if json {
            return #"{"paymentData":\#(paymentData),"token":\#(token),"key":\#(key)}"#
        }
        return """
            version:                \(result.version.rawValue)
            transactionId:          \(result.transactionID)
            publicKeyHash:          \(result.publicKeyHash)
            signingTime:            \(formatter.string(from: result.signingTime))
            key:                    \(result.keyID)
            merchantIdentifierHash: \(result.merchantIdentifierHash)
            paymentData:            \(paymentData)
            """
    }
}
