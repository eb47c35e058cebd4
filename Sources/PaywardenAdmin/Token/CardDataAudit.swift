import ApplePay
import Crypto
import Foundation
import KeyCustody
import PKCS11
import PaywardenPrimitives
import Vault

/// The audit line of one `paywarden token decrypt`: who ran it, which key opened the token, whether
/// the card data was revealed or masked, the `--at` instant if one was given, and a reference to
/// the transaction that is not its id: an HMAC under the vault's fingerprint key when the HSM has
/// one (a reader of the log cannot confirm a guess), else a SHA-256 (the id is 32 random bytes).
struct CardDataAudit {
    var log: AuditLog
    let revealed: Bool
    let at: Date?

    func refused(_ code: String) async throws {
        try await append(result: "refused", keyID: nil, merchantID: nil, detail: code + (revealed ? " (--reveal)" : ""))
    }

    func decrypted(_ token: DecryptedPaymentToken, merchantID: String?, hsm: HSM) async throws {
        var detail = "\(await Self.reference(token.transactionID, hsm: hsm)) \(revealed ? "revealed" : "masked")"
        if let at { detail += " at \(ISO8601DateFormatter().string(from: at))" }
        do {
            try await append(result: "ok", keyID: token.keyID, merchantID: merchantID, detail: detail)
        } catch {
            throw CommandFailure(.unavailable, "the audit log \(log.path) cannot be written, so the card data is not shown: \(error)")
        }
    }

    private func append(result: String, keyID: String?, merchantID: String?, detail: String) async throws {
        try await log.append(
            AuditLog.Record(
                time: Date(), user: AuditLog.currentUser, action: "token-decrypt", keyID: keyID, merchantID: merchantID, result: result,
                detail: detail))
    }

    static func reference(_ transactionID: String, hsm: HSM) async -> String {
        let input = Array("paywarden transaction v1 \(transactionID.lowercased())".utf8)
        let keyring = VaultKeyring(hsm: hsm)
        if (try? await keyring.refresh()) != nil, let key = keyring.keys(.fingerprint).first,
            let mac = try? await hsm.hmacSHA256(key.id, data: input)
        {
            return "tx:" + Hex.encode(mac.prefix(8))
        }
        return "tx:sha256:" + Hex.encode(SHA256.hash(data: input).prefix(8))
    }
}
