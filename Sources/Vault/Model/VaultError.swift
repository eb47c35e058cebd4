import PKCS11

/// Why the vault refused or failed, with one of Paywarden's stable codes. Messages never hold an
/// account number, a cryptogram, a registration ID or a token value.
public struct VaultError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        case registrationNotFound = "registration_not_found"
        case registrationExpired = "registration_expired"
        case tokenNotFound = "token_not_found"
        case tokenUnlinked = "token_unlinked"
        /// A stored token of a device account number (DPAN) named for recurring or merchant-initiated
        /// use, which only a merchant token (MPAN) may serve (Visa, 30 July 2025). A relay refuses it
        /// before anything is detokenized.
        case tokenNotRecurringEligible = "token_not_recurring_eligible"
        /// A stored token of a DPAN presented without a cryptogram to a relay whose format
        /// authenticates a DPAN with its cryptogram only (Radial's card-not-present request).
        case cryptogramRequired = "cryptogram_required"
        /// A multi-merchant payment relayed without saying which of its `authenticationResponses`
        /// (or the coordinator's own cryptogram) the authorisation uses.
        case submerchantRequired = "submerchant_required"
        /// The entry a relay request names is not in the payment (or the payment is not multi-merchant).
        case submerchantNotFound = "submerchant_not_found"
        case merchantNotAuthorized = "merchant_not_authorized"
        /// eProtect 880: the paypage does not allow the `reportGroup`.
        case reportGroupInvalid = "report_group_invalid"
        /// The decrypted payload holds no usable account number (cnpAPI 820).
        case invalidAccountNumber = "invalid_account_number"
        /// An admin request that cannot be carried out as asked (a duplicate paypage, a bad field).
        case invalidRequest = "invalid_request"
        case databaseUnavailable = "database_unavailable"
        /// The HSM cannot serve the vault's keys now, or they are missing.
        case hsmUnavailable = "hsm_unavailable"
        /// This HSM can never run what the vault needs (AES key wrap or AES-GCM, HMAC-SHA256): no
        /// retry helps, only another HSM or client library. The message names what is missing.
        case hsmCapabilityMissing = "hsm_capability_missing"
        /// A stored record does not open: altered, moved between rows, or its key destroyed. No
        /// request's fault; the server answers 500 and logs it.
        case recordUnreadable = "internal_error"
    }

    /// What a caller does about it, as ``StorageError`` and the HSM layer's errors say it.
    public enum Category: String, Sendable, Hashable {
        /// The request or what it names is at fault: refuse it; the same request cannot succeed.
        case refused
        /// The database or the HSM cannot serve now: answer 503 and let the caller retry.
        case unavailable
        /// A stored record does not open (altered, moved, its key gone): tell the operator.
        case corrupt
    }

    public var category: Category {
        switch code {
        case .databaseUnavailable, .hsmUnavailable: .unavailable
        case .recordUnreadable: .corrupt
        // Nobody's request is at fault, but no retry helps either: only the operator can.
        case .hsmCapabilityMissing: .refused
        case .registrationNotFound, .registrationExpired, .tokenNotFound, .tokenUnlinked, .tokenNotRecurringEligible, .cryptogramRequired,
            .submerchantRequired, .submerchantNotFound, .merchantNotAuthorized, .reportGroupInvalid, .invalidAccountNumber, .invalidRequest:
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

    /// An HSM failure while `doing` something: permanent when the HSM lacks the operation, else
    /// an outage the caller may retry.
    static func hsm(_ error: PKCS11Error, _ doing: String) -> VaultError {
        if case .capabilityMissing = error.code { return VaultError(.hsmCapabilityMissing, error.message) }
        return VaultError(.hsmUnavailable, "\(doing): \(error)")
    }

    /// The refusal for `gaps`, which are what this HSM lacks of the vault's needs.
    static func capabilityMissing(_ gaps: [CapabilityGap]) -> VaultError {
        VaultError(.hsmCapabilityMissing, "the vault cannot run on this HSM: " + gaps.map(\.description).joined(separator: "; "))
    }
}
