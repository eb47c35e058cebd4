/// Why a payment token was refused. The codes are Paywarden's stable interface (HTTP error
/// bodies, CLI output, metrics); messages name the failed step and the likely cause, and never
/// carry card data or key material.
public struct PaymentTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case malformedToken = "malformed_token"
        case unsupportedVersion = "unsupported_version"
        case signatureInvalid = "signature_invalid"
        case certificateChainInvalid = "certificate_chain_invalid"
        case signingTimeOutOfWindow = "signing_time_out_of_window"
        case replayedTransaction = "replayed_transaction"
        case unknownPublicKeyHash = "unknown_public_key_hash"
        case decryptionFailed = "decryption_failed"
        case hsmUnavailable = "hsm_unavailable"
        /// The HSM cannot run the key operation this token's version needs, and never will without
        /// another HSM or setting: the token is refused before its transaction id is claimed.
        case hsmCapabilityMissing = "hsm_capability_missing"
        case overloaded = "overloaded"
        /// The replay ledger could not be reached, so the token was not decrypted.
        case databaseUnavailable = "database_unavailable"
        /// The token is encrypted to a key the caller may not use (another merchant organisation's).
        case merchantNotAuthorized = "merchant_not_authorized"
        /// A multi-merchant payload whose `authenticationResponses` cannot be relied on (an entry
        /// without its fields, two entries alike, amounts over the payment's): decrypted, and refused.
        case authenticationResponsesInvalid = "authentication_responses_invalid"
    }

    /// What a caller does about it: refuse the token, or let the caller retry it later.
    public enum Category: String, Sendable, Hashable {
        /// The token is at fault (unreadable, unverifiable, replayed, not for a key here), or this
        /// service's HSM can never decrypt its kind: no retry helps.
        case refused
        /// The HSM or the replay ledger cannot serve now, or too many are in flight: the same token may
        /// succeed later, its transaction id not spent.
        case unavailable
    }

    public var category: Category {
        switch code {
        case .hsmUnavailable, .overloaded, .databaseUnavailable: .unavailable
        case .malformedToken, .unsupportedVersion, .signatureInvalid, .certificateChainInvalid, .signingTimeOutOfWindow,
            .replayedTransaction, .unknownPublicKeyHash, .decryptionFailed, .merchantNotAuthorized, .authenticationResponsesInvalid,
            .hsmCapabilityMissing:
            .refused
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func malformed(_ message: String) -> PaymentTokenError { PaymentTokenError(.malformedToken, message) }
    static func signature(_ message: String) -> PaymentTokenError { PaymentTokenError(.signatureInvalid, message) }
    static func chain(_ message: String) -> PaymentTokenError { PaymentTokenError(.certificateChainInvalid, message) }
}
