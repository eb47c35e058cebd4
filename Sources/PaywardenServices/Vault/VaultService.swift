import ApplePay
import Foundation
import KeyCustody
import Logging
import PaywardenPrimitives
import PaywardenStorage
import Vault

/// The vault's HTTP-facing work: registration (the token decrypted now, through the decryption
/// service and its replay ledger), redemption, detokenization and deletion, each counted by
/// outcome, the sensitive ones audited.
public final class VaultService: Sendable {
    let vault: CardVault
    let decryption: DecryptionService
    let metrics: ServerMetrics
    let audit: AuditLog?
    public let logger: Logger

    /// The vault's clock: what replies that carry a time (cnpAPI, Radial) stamp.
    public var now: Date { vault.now }

    public init(vault: CardVault, decryption: DecryptionService, metrics: ServerMetrics, audit: AuditLog?, logger: Logger) {
        self.vault = vault
        self.decryption = decryption
        self.metrics = metrics
        self.audit = audit
        self.logger = logger
    }

    /// Verifies and decrypts `token` (JSON) for a token registration of `policy`'s organisation:
    /// a key of a merchant the organisation does not use is refused before its transaction id is claimed.
    public func decrypt(_ token: [UInt8], policy: OrganizationPolicy) async throws(VaultFailure) -> DecryptedPaymentToken {
        try await vaulted { () async throws(VaultError) in try vault.requireKeys() }
        do {
            return try await decryption.decrypt(token, merchantIdentifierHashes: policy.merchantIdentifierHashes)
        } catch {
            throw .token(error)
        }
    }

    /// The organisation's token format and merchants (its enabled paypages).
    public func organizationPolicy(_ organization: OrganizationID) async throws(VaultFailure) -> OrganizationPolicy {
        // Paypages are plain rows, read by decryption too: no vault key is needed for them.
        try await vaulted(requiresVaultCapabilities: false) { () async throws(VaultError) in
            try await vault.organizationPolicy(organization)
        }
    }

    /// eProtect registration: the paypage checked, the token decrypted, a registration ID issued.
    /// `admit` runs once the paypage is known to exist (a look at its rate limit), before any
    /// decryption; `claimed` once the token has verified, belongs to one of the paypage's merchants
    /// and has spent its transaction id (the charge). Forms anyone can make up, and genuine tokens
    /// replayed or for other merchants (a buyer sees their own), cannot spend the merchant's limit.
    ///
    /// One write: the registration is stored, and the token's transaction id claimed, together
    /// after the HSM's work (the key agreement, the look-up key's hash and the seal, back to back on
    /// the decryption's thread); a replay is refused before the HSM by a look at the ledger.
    public func register(
        token: [UInt8], paypageID: String, reportGroup: String, admit: (PaypageRecord) throws(VaultFailure) -> Void,
        claimed: (PaypageRecord) -> Void
    ) async throws(VaultFailure) -> Registration {
        try await measured(.register) { () async throws(VaultFailure) in
            let vault = self.vault
            let paypage = try await vaulted { () async throws(VaultError) in
                try await vault.authorizePaypage(paypageID, reportGroup: reportGroup)
            }
            try admit(paypage)
            guard let policy = OrganizationPolicy(paypage: paypage) else {
                throw .vault(VaultError(.merchantNotAuthorized, "the paypage's token format is not T or D"))
            }
            try await vaulted { () async throws(VaultError) in try vault.requireKeys() }
            let stored: Result<Registration, VaultError>
            do throws(PaymentTokenError) {
                stored = try await decryption.decrypt(token, merchantIdentifierHashes: policy.merchantIdentifierHashes) {
                    decrypted, claim in
                    do throws(VaultError) {
                        guard let registration = try await vault.register(decrypted, paypage: paypage, claiming: claim) else {
                            return .replayed
                        }
                        return .stored(.success(registration))
                    } catch {
                        return .notStored(.failure(error))
                    }
                }
            } catch {
                if error.code == .decryptionFailed { claimed(paypage) }
                throw .token(error)
            }
            // Not stored (the database failed, say): nothing was claimed, so nothing is charged.
            let registration = try stored.mapError(VaultFailure.vault).get()
            claimed(paypage)
            return registration
        }
    }

    /// Every redemption is audited: who, for which organisation, and a keyed reference to the ID.
    public func redeem(_ id: PresentedRegistrationID, key: APIKey, organization: OrganizationID) async throws(VaultFailure) -> Redemption {
        try await audited(.redeem, key: key, organization: organization, naming: { "registration \($0.reference)" }) {
            () async throws(VaultError) in try await vault.redeem(id, organization: organization)
        }
    }

    /// A redemption for one authorization, the registration ended in the same write (the relays):
    /// `accept` turns the payload into what is sent, or refuses it and leaves the registration live.
    /// Audited as `redeem-once`, naming the registration by its reference.
    public func redeemForOneUse<Accepted>(
        _ id: PresentedRegistrationID, key: APIKey, organization: OrganizationID,
        accept: (DecryptedPayment?) throws(VaultFailure) -> Accepted
    ) async throws(VaultFailure) -> (redemption: Redemption, accepted: Accepted) {
        try await audited(.redeemOnce, key: key, organization: organization, naming: { "registration \($0.0.reference)" }) {
            () async throws(VaultFailure) in
            try await vaulted(accepting: accept) { (vaultAccept) async throws(VaultError) in
                try await vault.redeemForOneUse(id, organization: organization, accept: vaultAccept)
            }
        }
    }

    public func endRegistration(_ id: PresentedRegistrationID, key: APIKey, organization: OrganizationID) async throws(VaultFailure) {
        _ = try await audited(.endRegistration, key: key, organization: organization, naming: { "registration \($0)" }) {
            () async throws(VaultError) in try await vault.endRegistration(id, organization: organization)
        }
    }

    /// A high-value token for a token decrypted for `policy`'s organisation (cnpAPI `registerTokenRequest`).
    public func issueToken(for token: DecryptedPaymentToken, policy: OrganizationPolicy) async throws(VaultFailure) -> IssuedToken {
        try await measured(.issueToken) { () async throws(VaultFailure) in
            try await vaulted { () async throws(VaultError) in
                try await vault.issueToken(for: try AccountFacts(payment: token.payment), policy: policy)
            }
        }
    }

    /// Keeps `token`'s decrypted payload sealed for the first authorization that presents
    /// `issued` (Radial's decrypt sequence): its cryptogram authorizes once, within 24 hours.
    public func holdCryptogram(of token: DecryptedPaymentToken, for issued: IssuedToken, organization: OrganizationID)
        async throws(VaultFailure)
    {
        _ = try await measured(.holdCryptogram) { () async throws(VaultFailure) in
            try await vaulted { () async throws(VaultError) in
                try await vault.holdCryptogram(of: token, for: issued, organization: organization)
            }
        }
    }

    /// The payload held for `token`'s first use, ended as it is taken; nil when none is left.
    /// Audited: who took a cryptogram (or found none), never the token or the cryptogram.
    /// `accept` turns the held payload into what is used, or refuses it and leaves it held.
    public func takeHeldCryptogram<Accepted>(
        for token: String, key: APIKey, organization: OrganizationID, accept: ([UInt8]) throws(VaultFailure) -> Accepted
    ) async throws(VaultFailure) -> Accepted? {
        try await audited(.takeHeldCryptogram, key: key, organization: organization, naming: { $0 == nil ? "none held" : "taken" }) {
            () async throws(VaultFailure) in
            try await vaulted(accepting: accept) { (vaultAccept) async throws(VaultError) in
                try await vault.takeHeldCryptogram(for: token, organization: organization, accept: vaultAccept)
            }
        }
    }

    /// A vault operation whose `accept` closure may throw only the vault's errors, given the
    /// caller's, which may refuse with any ``VaultFailure``: such a refusal is carried out beside the
    /// vault's closure (the vault sees it as a refusal and changes nothing) and is what the audit
    /// line and the caller are told.
    private func vaulted<Input, Accepted, Result>(
        accepting accept: (Input) throws(VaultFailure) -> Accepted,
        _ operation: ((Input) throws(VaultError) -> Accepted) async throws(VaultError) -> Result
    ) async throws(VaultFailure) -> Result {
        var refusal: VaultFailure?
        do throws(VaultFailure) {
            return try await vaulted { () async throws(VaultError) in
                // Called only within this call: the closure does not outlive it.
                try await withoutActuallyEscaping(accept) { accept async throws(VaultError) in
                    try await operation { input throws(VaultError) in
                        do throws(VaultFailure) {
                            return try accept(input)
                        } catch {
                            refusal = error
                            if case .vault(let refused) = error { throw refused }
                            throw VaultError(.invalidRequest, error.message)
                        }
                    }
                }
            }
        } catch {
            throw refusal ?? error
        }
    }

    public func detokenize(_ token: String, key: APIKey, organization: OrganizationID) async throws(VaultFailure) -> DetokenizedAccount {
        try await audited(.detokenize, key: key, organization: organization, naming: { "token \($0.reference)" }) {
            () async throws(VaultError) in try await vault.detokenize(token, organization: organization)
        }
    }

    /// A token's kind from its record, nothing decrypted (``StoredCredentialRule`` decides on it
    /// before a relay detokenizes). Counted, not audited: no account data is read.
    public func storedTokenFacts(_ token: String, organization: OrganizationID) async throws(VaultFailure) -> StoredTokenFacts {
        try await measured(.tokenFacts) { () async throws(VaultFailure) in
            // A row's facts only: a relay's own stored tokens (not found here) pass through on any HSM.
            try await vaulted(requiresVaultCapabilities: false) { () async throws(VaultError) in
                try await vault.storedTokenFacts(token, organization: organization)
            }
        }
    }

    /// Audits a relay's refusal to use a stored token as the request asked (``StoredCredentialRule``):
    /// who, the stable code and the token's reference. Nothing was detokenized.
    public func recordRefusedUse(of facts: StoredTokenFacts, key: APIKey, organization: OrganizationID, failure: VaultFailure) async {
        await record(
            .useStoredToken, key: key, organization: organization, result: "refused",
            detail: "\(failure.code.rawValue) token \(facts.reference)")
    }

    public func deleteToken(_ token: String, key: APIKey, organization: OrganizationID) async throws(VaultFailure) {
        _ = try await audited(.deleteToken, key: key, organization: organization, naming: { "token \($0)" }) {
            () async throws(VaultError) in try await vault.deleteToken(token, organization: organization)
        }
    }

    /// Runs a vault operation an API key asked for, measured under `operation` and audited whatever
    /// the outcome; `naming` gives the audit detail of a success (a keyed reference, never the
    /// ID or token), a refusal records its stable code.
    private func audited<Value>(
        _ operation: VaultOperation, key: APIKey, organization: OrganizationID, naming: (Value) -> String,
        _ body: () async throws(VaultError) -> Value
    ) async throws(VaultFailure) -> Value {
        try await audited(operation, key: key, organization: organization, naming: naming) { () async throws(VaultFailure) in
            try await vaulted(body)
        }
    }

    /// Measured, and one audit line whatever the outcome: the refusal's stable code, or `ok`.
    private func audited<Value>(
        _ operation: VaultOperation, key: APIKey, organization: OrganizationID, naming: (Value) -> String,
        _ body: () async throws(VaultFailure) -> Value
    ) async throws(VaultFailure) -> Value {
        do {
            let value = try await measured(operation, body)
            await record(operation, key: key, organization: organization, result: "ok", detail: naming(value))
            return value
        } catch {
            await record(operation, key: key, organization: organization, result: "refused", detail: error.code.rawValue)
            throw error
        }
    }

    /// One audit line: who (the API key's name), what, for which organisation, and a reference
    /// to the token that is neither the token nor its account number.
    private func record(_ operation: VaultOperation, key: APIKey, organization: OrganizationID, result: String, detail: String) async {
        guard let audit else { return }
        let record = AuditLog.Record(
            time: vault.now, user: "api-key:\(key.name)", action: operation.auditAction, keyID: nil, merchantID: organization.rawValue,
            result: result,
            detail: detail)
        do {
            try await audit.append(record)
        } catch {
            logger.error("the audit log could not be written", metadata: ["action": "\(operation.auditAction)", "error": "\(error)"])
        }
    }

    /// Runs a vault operation, its errors the caller's; one that `requiresVaultCapabilities` is refused
    /// for good first on an HSM that can never run the vault, whatever the records hold.
    private func vaulted<Value>(requiresVaultCapabilities: Bool = true, _ body: () async throws(VaultError) -> Value)
        async throws(VaultFailure)
        -> Value
    {
        do {
            if requiresVaultCapabilities { try vault.requireCapabilities() }
            return try await body()
        } catch {
            if error.category == .corrupt { logger.error("vault record unreadable", metadata: ["reason": "\(error.message)"]) }
            throw .vault(error)
        }
    }

    private func measured<Value>(_ operation: VaultOperation, _ body: () async throws(VaultFailure) -> Value) async throws(VaultFailure)
        -> Value
    {
        let start = ContinuousClock.now
        do {
            let value = try await body()
            metrics.vault(operation: operation, outcome: .ok, duration: ContinuousClock.now - start)
            return value
        } catch {
            metrics.vault(operation: operation, outcome: .refused(error.code), duration: ContinuousClock.now - start)
            throw error
        }
    }
}

/// Why a vault request failed: the token (verification, decryption) or the vault.
public enum VaultFailure: Error, Sendable {
    case token(PaymentTokenError)
    case vault(VaultError)
    /// Over a registration rate limit: retry after the duration.
    case rateLimited(Duration, String)
    /// The API key lacks the scope the operation needs (a relay's stored token needs `detokenize`);
    /// the message names the key and the scope.
    case forbidden(String)

    /// The stable code, which every protocol's mapping switches on.
    public var code: StableCode {
        switch self {
        case .token(let error): StableCode(error.code)
        case .vault(let error): StableCode(error.code)
        case .rateLimited: .rateLimited
        case .forbidden: .forbidden
        }
    }

    /// What a relay's caller is told (``StableCode/publicMessage(_:)``); the words kept from it
    /// go to `logger` under `what`, as the JSON routes' go to the request's log line.
    public func publicMessage(logging logger: Logger, _ what: Logger.Message) -> String {
        let told = code.publicMessage(message)
        if told != message { logger.error(what, metadata: ["code": "\(code.rawValue)", "detail": "\(message)"]) }
        return told
    }

    public var message: String {
        switch self {
        case .token(let error): error.message
        case .vault(let error): error.message
        case .rateLimited(_, let who): "too many registrations from \(who)"
        case .forbidden(let message): message
        }
    }
}
