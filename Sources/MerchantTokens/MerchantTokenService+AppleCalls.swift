import Foundation
import KeyCustody
import Logging
import OutboundTLS
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage
import Synchronization
import Vault

/// The calls to Apple merchants and admins make, each authorised and audited.
extension MerchantTokenService {
    /// Unlinks a merchant token at Apple, then makes the caller's organisation's high-value tokens
    /// for it unusable here at once (another organisation with a paypage for the same merchant id
    /// keeps its own until Apple's UNLINK event arrives, which unlinks every organisation's).
    public func unlink(merchantID: String, merchantTokenID: String, user: String, organization: OrganizationID?)
        async throws(MerchantTokenFailure)
        -> MerchantTokenEffect
    {
        try Self.checkIdentifiers(merchantID: merchantID, merchantTokenID: merchantTokenID)
        return try await audited("merchant-tokens.unlink", user: user, merchantID: merchantID, merchantTokenID: merchantTokenID) {
            () async throws(MerchantTokenFailure) in
            try await authorize(merchantID: merchantID, merchantTokenID: merchantTokenID, organization: organization)
            // Here first: the safe direction. Should Apple then fail, the tokens are already
            // unusable and the caller's retry (idempotent here) only has Apple left to do.
            let effect: MerchantTokenEffect
            do throws(VaultError) {
                effect = try await vault.unlinkMerchantToken(merchantTokenID, organization: organization)
            } catch {
                throw MerchantTokenFailure(error)
            }
            do throws(AppleGatewayError) {
                try await gateway.unlink(merchantID: merchantID, merchantTokenID: merchantTokenID)
            } catch {
                throw MerchantTokenFailure(error)
            }
            return effect
        }
    }

    /// Sets the URL Apple notifies for a merchant token (`updateMerchantMetadata`).
    public func updateNotificationURL(
        merchantID: String, merchantTokenID: String, url: String, user: String, organization: OrganizationID?
    ) async throws(MerchantTokenFailure) {
        try Self.checkIdentifiers(merchantID: merchantID, merchantTokenID: merchantTokenID)
        _ = try await audited("merchant-tokens.update-url", user: user, merchantID: merchantID, merchantTokenID: merchantTokenID) {
            () async throws(MerchantTokenFailure) in
            try await authorize(merchantID: merchantID, merchantTokenID: merchantTokenID, organization: organization)
            do throws(AppleGatewayError) {
                try await gateway.updateNotificationURL(merchantID: merchantID, merchantTokenID: merchantTokenID, url: url)
            } catch {
                throw MerchantTokenFailure(error)
            }
            return MerchantTokenEffect(summary: "notification URL updated", tokens: 0)
        }
    }

    /// Apple Pay on the web: a payment session for the merchant, Apple's object returned as sent.
    public func paymentSession(_ request: PaymentSessionRequest, organization: OrganizationID) async throws(MerchantTokenFailure) -> [UInt8]
    {
        try await authorize(merchantID: request.merchantIdentifier, organization: organization)
        do {
            let session = try await gateway.paymentSession(request)
            metrics?.merchantTokenEvent(.paymentSession)
            return session
        } catch {
            metrics?.paymentSessionFailed(code: error.code.rawValue)
            throw MerchantTokenFailure(error)
        }
    }

    /// Bounded, printable identifiers before anything is looked up or audited: a request body is
    /// anyone's text, and an audit line must not become a place to write a card number.
    public static func checkIdentifiers(merchantID: String, merchantTokenID: String) throws(MerchantTokenFailure) {
        guard isIdentifier(merchantID, maximumLength: 128), isIdentifier(merchantTokenID, maximumLength: 64) else {
            throw MerchantTokenFailure(
                .invalidRequest,
                "merchantId (letters, digits, . _ -, at most 128) or merchantTokenId (at most 64 of the same) is malformed")
        }
    }

    /// An organisation acts only for the merchants of its paypages, and only on merchant tokens
    /// it holds a high-value token for. Admins (no organisation) act for any.
    func authorize(merchantID: String, merchantTokenID: String? = nil, organization: OrganizationID?) async throws(MerchantTokenFailure) {
        guard let organization else { return }
        do {
            let policy = try await vault.organizationPolicy(organization)
            guard policy.merchantIdentifiers.contains(merchantID) else {
                throw MerchantTokenFailure(
                    .merchantNotAuthorized, "organisation \(organization) has no paypage for merchant \(merchantID)")
            }
            if let merchantTokenID {
                guard try await vault.organizations(holdingMerchantToken: merchantTokenID).contains(organization) else {
                    throw MerchantTokenFailure(
                        .tokenNotFound, "organisation \(organization) holds no such merchant token")
                }
            }
        } catch let error as MerchantTokenFailure {
            throw error
        } catch let error as VaultError {
            throw MerchantTokenFailure(error)
        } catch {
            throw MerchantTokenFailure(.internalError, "\(error)")
        }
    }

    private func audited<Value>(
        _ action: String, user: String, merchantID: String, merchantTokenID: String,
        _ body: () async throws(MerchantTokenFailure) -> Value
    ) async throws(MerchantTokenFailure) -> Value {
        do {
            let value = try await body()
            await writeAudit(user: user, action: action, merchantID: merchantID, result: "ok", detail: "merchant token \(merchantTokenID)")
            return value
        } catch {
            await writeAudit(
                user: user, action: action, merchantID: merchantID, result: "refused", detail: "\(merchantTokenID): \(error.code)")
            throw error
        }
    }

    func writeAudit(user: String, action: String, merchantID: String, result: String, detail: String) async {
        guard let audit else { return }
        do {
            try await audit.append(
                AuditLog.Record(
                    time: vault.now, user: user, action: action, keyID: nil, merchantID: merchantID, result: result, detail: detail))
        } catch {
            logger.error("the audit log could not be written", metadata: ["action": "\(action)", "error": "\(error)"])
        }
    }
}
