import ApplePay
import Foundation
import PaywardenStorage
import Vault

extension CardVault {
    /// Registers a payload a test decrypted itself (no token, so no transaction id of its own to
    /// claim): the claim the service makes with every registration is made for a fresh random id.
    public func register(_ token: DecryptedPaymentToken, paypage: PaypageRecord) async throws -> Registration {
        let claim = TransactionClaim(
            transactionID: (0..<32).map { _ in UInt8.random(in: 0...255) }, expiry: now.addingTimeInterval(300), now: now)
        guard let registration = try await register(token, paypage: paypage, claiming: claim) else {
            throw VaultError(.databaseUnavailable, "a fresh transaction id was refused as a replay")
        }
        return registration
    }
}
