/// A vault operation, as `paywarden_vault_operations_total{operation}` names it and, for those an
/// API key asks for, as the audit trail's `action` does. Both names are written out: a label or an
/// action that dashboards and trail readers match on changes only here, on purpose.
public enum VaultOperation: String, Sendable, Hashable, CaseIterable {
    case register
    case redeem
    case redeemOnce = "redeem_once"
    case endRegistration = "end_registration"
    case issueToken = "issue_token"
    case holdCryptogram = "hold_cryptogram"
    case takeHeldCryptogram = "take_held_cryptogram"
    case detokenize
    case tokenFacts = "token_facts"
    case deleteToken = "delete_token"
    /// A relay's refusal to use a stored token as asked: audited, never measured.
    case useStoredToken = "use_stored_token"

    /// The metric label.
    public var label: String { rawValue }

    /// The audit line's action: the trail's names, with hyphens.
    public var auditAction: String {
        switch self {
        case .register: "register"
        case .redeem: "redeem"
        case .redeemOnce: "redeem-once"
        case .endRegistration: "end-registration"
        case .issueToken: "issue-token"
        case .holdCryptogram: "hold-cryptogram"
        case .takeHeldCryptogram: "take-held-cryptogram"
        case .detokenize: "detokenize"
        case .tokenFacts: "token-facts"
        case .deleteToken: "delete-token"
        case .useStoredToken: "use-stored-token"
        }
    }
}
