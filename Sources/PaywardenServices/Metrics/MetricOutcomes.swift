import ApplePay

/// The `outcome` label of a counted operation (a decryption, a vault operation): `ok`, or the
/// code it was refused with. A type rather than a string, so that a label is one of a known set
/// (every series a dashboard or alert names exists), never whatever a caller wrote.
public enum OperationOutcome<Code: RawRepresentable & Hashable & Sendable>: Hashable, Sendable where Code.RawValue == String {
    case ok
    case refused(Code)

    public var label: String {
        switch self {
        case .ok: "ok"
        case .refused(let code): code.rawValue
        }
    }
}

/// The `outcome` label of a decrypt-endpoint call by API key.
public enum DecryptRequestOutcome: Hashable, Sendable {
    case ok
    case refused(StableCode)
    /// The body could not be read (the connection went, the read deadline passed).
    case unread

    public var label: String {
        switch self {
        case .ok: "ok"
        case .refused(let code): code.rawValue
        case .unread: "unread"
        }
    }
}

/// What merchant-token work came to (`paywarden_merchant_token_events_total{outcome}`); a payment
/// session's failure is labelled by the gateway's code (``ServerMetrics/paymentSessionFailed(code:)``).
public enum MerchantTokenOutcome: String, CaseIterable, Sendable {
    case received
    case repeated
    case refusedSource = "refused_source"
    case refusedOverLimit = "refused_over_limit"
    case idForAnotherMerchant = "id_for_another_merchant"
    case applied
    case retry
    case failed
    case paymentSession = "payment_session"
}

/// What the vault's maintenance counts (`paywarden_vault_maintenance_total{kind}`).
public enum VaultMaintenanceKind: String, CaseIterable, Sendable {
    case registrationPayloadsDestroyed = "registration_payloads_destroyed"
    case registrationTombstonesDeleted = "registration_tombstones_deleted"
    case unlinkedTokensDeleted = "unlinked_tokens_deleted"
    case vaultKeysDestroyed = "vault_keys_destroyed"
    case rowsMovedToCurrentKey = "rows_moved_to_current_key"
    case failedRounds = "failed_rounds"
}
