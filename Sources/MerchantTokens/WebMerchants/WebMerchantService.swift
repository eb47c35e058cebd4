import Foundation
import KeyCustody
import Logging
import OutboundTLS
import PaywardenPrimitives
import PaywardenServices
import PaywardenStorage

/// Web merchants registered with Apple by the platform integrator (docs/web-merchants.md): each
/// limit checked before any call to Apple, Apple's answer recorded in the database and audited,
/// the domain-verification file stored byte for byte. The HTTP controller and the CLI both go
/// through it.
public final class WebMerchantService: Sendable {
    let gateway: any WebMerchantGateway
    let store: any WebMerchantStore
    /// The Payment Platform Integrator ID (`platform_integrator_id`); nil refuses every call.
    public let integratorID: String?
    /// Reads a domain's challenge file; nil where nothing may be proved (the admin commands, which
    /// vouch for what they register).
    let domainCheck: (any DomainControlCheck)?
    let audit: AuditLog?
    let logger: Logger
    let clock: @Sendable () -> Date

    /// The domain-verification file Apple issues is a few kilobytes of text; anything near this is not one.
    public static let maximumDomainAssociationBytes = 256 * 1024
    /// How long a change holds a web merchant if it never finishes (its process died): well past
    /// the longest a call to Apple may take with its retries.
    public static let changeLease: TimeInterval = 300

    public init(
        gateway: any WebMerchantGateway, store: any WebMerchantStore, integratorID: String?, domainCheck: (any DomainControlCheck)? = nil,
        audit: AuditLog?, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.gateway = gateway
        self.store = store
        self.integratorID = integratorID
        self.domainCheck = domainCheck
        self.audit = audit
        self.logger = logger
        self.clock = clock
    }

    // MARK: Registering

    /// Registers `domainNames` for the merchant of `organization` (more may be added by later
    /// calls, up to 99 in all) and returns the registration as recorded. `encryptTo` defaults to the
    /// integrator id; only an admin names another party's, since tokens of the merchant are then
    /// encrypted to that party's key.
    ///
    /// Each new domain must be the organisation's: proved by its challenge served under the domain
    /// (an organisation's key), given to it by an admin, or registered by an admin for it (the
    /// command line). A domain belongs to one organisation and one web merchant, the database's
    /// constraint: Paywarden serves one verification file for every host, so Apple's check alone
    /// would not stop one tenant taking another's checkout domain. The identifier is reserved for
    /// the organisation before Apple is called, and the record written by a compare-and-set on that
    /// change and the organisation: of two requests for one web merchant, one goes to Apple.
    public func register(
        partnerInternalMerchantIdentifier identifier: String, partnerMerchantName: String, domainNames: [String],
        encryptTo: String?, merchantURL: String?, user: String, organization: OrganizationID, actor: WebMerchantActor
    ) async throws(MerchantTokenFailure) -> WebMerchantRecord {
        let integrator = try requireIntegrator()
        let domains = domainNames.map { $0.lowercased() }
        if let encryptTo, encryptTo != integrator, actor != .admin {
            throw MerchantTokenFailure(
                .forbidden,
                "encryptTo may name only the platform integrator \(integrator) for an organisation's key; another party's id "
                    + "(a processor that decrypts for the merchant) is an admin's choice: paywarden web-merchants register --encrypt-to")
        }
        let request: RegisterMerchantRequest
        do throws(AppleGatewayError) {
            request = try RegisterMerchantRequest(
                partnerInternalMerchantIdentifier: identifier, partnerMerchantName: partnerMerchantName, domainNames: domains,
                encryptTo: encryptTo ?? integrator, merchantURL: merchantURL)
        } catch {
            throw MerchantTokenFailure(error)
        }
        return try await audited("web-merchants.register", user: user, identifier: identifier, detail: "\(domains.count) domain(s)") {
            () async throws(MerchantTokenFailure) in
            // Another organisation's identifier is answered as absent at once (the hold below decides
            // for good). Domains are proved before the web merchant is held, as the fetches may take
            // seconds: one another organisation holds is refused here, one nobody holds proved now.
            if let existing = try await readWebMerchant(identifier), existing.state != .reserved,
                existing.organization != organization
            {
                throw Self.notFound(identifier)
            }
            // What is checked here costs nothing outside: before any domain is read.
            guard let file = try await readDomainAssociation() else {
                throw MerchantTokenFailure(
                    .domainAssociationMissing,
                    "no domain-verification file is stored: Apple fetches it from every domain before registering; store the "
                        + "platform integrator's file with `paywarden web-merchants domain-association FILE`")
            }
            let proven = try await proveNewDomains(domains, organization: organization, actor: actor)
            let now = clock()
            let reservation = WebMerchantRecord(
                id: identifier, partnerMerchantName: request.partnerMerchantName, encryptTo: request.encryptTo,
                merchantURL: request.merchantURL, domainNames: [], state: .reserved, organization: organization,
                domainAssociationSHA256: nil, createdAt: now, updatedAt: now)
            let change = try await beginChange(identifier, organization: organization, reservation: reservation, now: now)
            var bound: [String] = []
            do throws(MerchantTokenFailure) {
                let existing = change.record
                let active = existing.state == .active ? existing.domainNames : []
                let added = domains.filter { !active.contains($0) }
                guard active.count + added.count <= WebMerchantField.maximumDomains else {
                    throw MerchantTokenFailure(
                        .webMerchantDomainLimit,
                        "Apple registers at most \(WebMerchantField.maximumDomains) domains per partnerInternalMerchantIdentifier: "
                            + "\(identifier) has \(active.count) and this adds \(added.count); unregister some first")
                }
                // Apple does not say whether registering a registered domain again is 200 or 400 (docs/web-merchants.md),
                // so only new domains are sent, and a repeat of a registration as recorded asks nothing of Apple.
                if added.isEmpty, existing.state == .active, existing.partnerMerchantName == request.partnerMerchantName,
                    existing.encryptTo == request.encryptTo, existing.merchantURL == request.merchantURL
                {
                    await abandon(change, bound: [])
                    return existing
                }
                bound = try await bind(added, to: identifier, organization: organization, proven: proven, actor: actor, now: now)
                do throws(AppleGatewayError) {
                    let sent =
                        added.isEmpty || added.count == domains.count
                        ? request
                        : try RegisterMerchantRequest(
                            partnerInternalMerchantIdentifier: identifier, partnerMerchantName: request.partnerMerchantName,
                            domainNames: added, encryptTo: request.encryptTo, merchantURL: request.merchantURL)
                    try await gateway.registerMerchant(sent, integratorID: integrator)
                } catch {
                    throw MerchantTokenFailure(error)
                }
                let record = WebMerchantRecord(
                    id: identifier, partnerMerchantName: request.partnerMerchantName, encryptTo: request.encryptTo,
                    merchantURL: request.merchantURL, domainNames: active + added, state: .active,
                    organization: existing.organization, domainAssociationSHA256: file.sha256,
                    createdAt: existing.createdAt, updatedAt: clock())
                try await finish(change, record, afterAppleDid: "registered")
                return record
            } catch {
                await abandon(change, bound: bound)
                throw error
            }
        }
    }

    /// Unregisters `domainNames` (each one registered now); the merchant's last domain deletes its
    /// registration at Apple, and it is recorded as deleted. The domains stay the organisation's,
    /// free for another of its web merchants.
    public func unregister(
        partnerInternalMerchantIdentifier identifier: String, domainNames: [String], reason: String, user: String,
        organization: OrganizationID?
    ) async throws(MerchantTokenFailure) -> WebMerchantRecord {
        let integrator = try requireIntegrator()
        let domains = domainNames.map { $0.lowercased() }
        let request: UnregisterMerchantRequest
        do throws(AppleGatewayError) {
            request = try UnregisterMerchantRequest(partnerInternalMerchantIdentifier: identifier, domainNames: domains, reason: reason)
        } catch {
            throw MerchantTokenFailure(error)
        }
        return try await audited("web-merchants.unregister", user: user, identifier: identifier, detail: "\(domains.count) domain(s)") {
            () async throws(MerchantTokenFailure) in
            let change = try await beginChange(identifier, organization: organization, reservation: nil, now: clock())
            do throws(MerchantTokenFailure) {
                var record = change.record
                guard record.state == .active else { throw Self.notFound(identifier) }
                let unknown = domains.filter { !record.domainNames.contains($0) }
                guard unknown.isEmpty else {
                    throw MerchantTokenFailure(
                        .invalidRequest,
                        "\(identifier) has no registered domain \(unknown.joined(separator: ", ")); Apple unregisters only domains "
                            + "registered before")
                }
                do throws(AppleGatewayError) {
                    try await gateway.unregisterMerchant(request, integratorID: integrator)
                } catch {
                    throw MerchantTokenFailure(error)
                }
                record.domainNames.removeAll { domains.contains($0) }
                if record.domainNames.isEmpty { record.state = .deleted }
                record.updatedAt = clock()
                try await finish(change, record, afterAppleDid: "unregistered")
                await unbind(domains, from: identifier)
                return record
            } catch {
                await abandon(change, bound: [])
                throw error
            }
        }
    }

    // MARK: Reading

    /// Paywarden's record beside Apple's details (not asked for a deleted registration).
    public func show(partnerInternalMerchantIdentifier identifier: String, organization: OrganizationID?) async throws(MerchantTokenFailure)
        -> WebMerchantShown
    {
        let integrator = try requireIntegrator()
        guard WebMerchantField.isPartnerIdentifier(identifier) else {
            throw MerchantTokenFailure(
                .invalidRequest,
                "partnerInternalMerchantIdentifier must be 3 to 1024 characters from a-z A-Z 0-9 and ~ - _ + & @ $ ! | , . ;")
        }
        guard let record = try await owned(identifier, organization: organization, requireActive: false) else {
            throw Self.notFound(identifier)
        }
        guard record.state == .active else {
            return WebMerchantShown(record: record, apple: nil, encryptToMatches: nil, onlyHere: [], onlyAtApple: [])
        }
        let details: MerchantDetails
        do throws(AppleGatewayError) {
            details = try await gateway.merchantDetails(partnerInternalMerchantIdentifier: identifier, integratorID: integrator)
        } catch {
            throw MerchantTokenFailure(error)
        }
        let apple = Set((details.domainNames ?? []).map { $0.lowercased() })
        return WebMerchantShown(
            record: record, apple: details, encryptToMatches: details.encryptToMatches(record.encryptTo),
            onlyHere: record.domainNames.filter { !apple.contains($0) },
            onlyAtApple: apple.subtracting(record.domainNames).sorted())
    }

    /// Every web merchant the organisation registered (every one for an admin), by identifier.
    public func list(organization: OrganizationID?) async throws(MerchantTokenFailure) -> [WebMerchantRecord] {
        let all: [WebMerchantRecord]
        do throws(StorageError) {
            all = try await store.webMerchants()
        } catch {
            throw MerchantTokenFailure(error)
        }
        // A reserved identifier has nothing at Apple yet: a registration under way, or one that died.
        let registered = all.filter { $0.state != .reserved }
        guard let organization else { return registered }
        return registered.filter { $0.organization == organization }
    }

    /// The web merchant named `identifier` when there is one this organisation may use: its own.
    public func webMerchant(_ identifier: String, organization: OrganizationID?) async throws(MerchantTokenFailure) -> WebMerchantRecord? {
        try await owned(identifier, organization: organization, requireActive: false)
    }

    // MARK: The domain-verification file

    /// Stores the platform integrator's domain-verification file byte for byte.
    public func storeDomainAssociation(_ content: [UInt8], user: String) async throws(MerchantTokenFailure) -> DomainAssociationRecord {
        guard !content.isEmpty, content.count <= Self.maximumDomainAssociationBytes else {
            throw MerchantTokenFailure(
                .invalidRequest,
                "the domain-verification file must be 1 to \(Self.maximumDomainAssociationBytes) bytes (Apple's is a few kilobytes)")
        }
        let record = DomainAssociationRecord(content: content, sha256: WebMerchantField.sha256Hex(content), storedAt: clock())
        do throws(StorageError) {
            try await store.saveDomainAssociation(record)
        } catch {
            await writeAudit(user: user, action: "web-merchants.domain-association", identifier: nil, result: "refused", detail: "database")
            throw MerchantTokenFailure(error)
        }
        await writeAudit(
            user: user, action: "web-merchants.domain-association", identifier: nil, result: "ok",
            detail: "\(content.count) bytes, sha256 \(record.sha256)")
        return record
    }

    /// The stored file, or nil when none is.
    public func domainAssociation() async throws(MerchantTokenFailure) -> DomainAssociationRecord? {
        try await readDomainAssociation()
    }

    // MARK: Helpers

    func requireIntegrator() throws(MerchantTokenFailure) -> String {
        guard let integratorID else {
            throw MerchantTokenFailure(
                .platformIntegratorNotConfigured,
                "no platform integrator is configured: set PAYWARDEN_PLATFORM_INTEGRATOR_ID (platform_integrator_id) to the Payment "
                    + "Platform Integrator ID whose identity key is in the HSM")
        }
        return integratorID
    }

    static func notFound(_ identifier: String) -> MerchantTokenFailure {
        MerchantTokenFailure(.webMerchantNotFound, "no web merchant \(identifier) is registered here")
    }

    /// The record when the organisation may act on it (its own; every one for an admin, `organization`
    /// nil); nil otherwise.
    private func owned(_ identifier: String, organization: OrganizationID?, requireActive: Bool) async throws(MerchantTokenFailure)
        -> WebMerchantRecord?
    {
        let record: WebMerchantRecord?
        do throws(StorageError) {
            record = try await store.webMerchant(id: identifier)
        } catch {
            throw MerchantTokenFailure(error)
        }
        // A reservation is no registration yet: nothing to show, unregister or take a session for.
        guard let record, record.state != .reserved else { return nil }
        if let organization, record.organization != organization {
            // Another organisation's merchant is answered as absent: its existence is not the caller's to learn.
            if requireActive { return nil }
            throw Self.notFound(identifier)
        }
        if requireActive && record.state != .active { return nil }
        return record
    }

    private func readWebMerchant(_ identifier: String) async throws(MerchantTokenFailure) -> WebMerchantRecord? {
        do throws(StorageError) {
            return try await store.webMerchant(id: identifier)
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    private func readDomainAssociation() async throws(MerchantTokenFailure) -> DomainAssociationRecord? {
        do throws(StorageError) {
            return try await store.domainAssociation()
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// A change of one web merchant under way: it holds the row until it finishes or is abandoned.
    struct Change {
        let id: String
        let changeID: String
        /// The row as the change found it (a new reservation, or the web merchant's record).
        let record: WebMerchantRecord
    }

    /// Holds web merchant `identifier` for this request: reserved for `organization` when new
    /// (with `reservation`), or taken from the organisation's row (any row's, for an admin's
    /// `organization` nil) when no other change holds it.
    private func beginChange(
        _ identifier: String, organization: OrganizationID?, reservation: WebMerchantRecord?, now: Date
    ) async throws(MerchantTokenFailure) -> Change {
        let changeID = UUID().uuidString
        let start: WebMerchantChangeStart
        do throws(StorageError) {
            start = try await store.beginWebMerchantChange(
                WebMerchantChange(
                    merchantID: identifier, organization: organization, reservation: reservation, changeID: changeID, now: now,
                    until: now.addingTimeInterval(Self.changeLease)))
        } catch {
            throw MerchantTokenFailure(error)
        }
        switch start {
        case .started(let record): return Change(id: identifier, changeID: changeID, record: record)
        case .absent: throw Self.notFound(identifier)
        case .refused(let record):
            // Another organisation's identifier is answered as absent: its existence is not the caller's to learn.
            if let organization, record.organization != organization { throw Self.notFound(identifier) }
            throw MerchantTokenFailure(
                .concurrentChange,
                "another request is changing web merchant \(identifier) now; repeat this one when it has finished")
        }
    }

    /// Apple changed; the record follows, by a compare-and-set on the change and the organisation.
    /// Should the database fail (or the change have lapsed) now, the log says so, since Apple's side
    /// is done and a repeat of the same call is safe.
    private func finish(_ change: Change, _ record: WebMerchantRecord, afterAppleDid what: String) async throws(MerchantTokenFailure) {
        let written: Bool
        do throws(StorageError) {
            written = try await store.finishWebMerchantChange(record, changeID: change.changeID)
        } catch {
            logger.error(
                "Apple \(what) the web merchant but the record could not be written; repeat the same call",
                metadata: ["web-merchant": "\(record.id)", "error": "\(error)"])
            throw MerchantTokenFailure(error)
        }
        guard written else {
            logger.error(
                "Apple \(what) the web merchant but its change lapsed before the record was written; repeat the same call",
                metadata: ["web-merchant": "\(record.id)"])
            throw MerchantTokenFailure(
                .concurrentChange,
                "Apple \(what) web merchant \(record.id), but this request's hold on it lapsed before the record was written: "
                    + "repeat the same call")
        }
    }

    /// Lets the web merchant go without writing it (a reservation it made is removed), and frees
    /// the domains this change bound to it.
    private func abandon(_ change: Change, bound: [String]) async {
        await unbind(bound, from: change.id)
        do throws(StorageError) {
            try await store.abandonWebMerchantChange(id: change.id, changeID: change.changeID)
        } catch {
            logger.error(
                "a change of a web merchant could not be let go; it lapses by itself",
                metadata: ["web-merchant": "\(change.id)", "error": "\(error)"])
        }
    }

    func audited<Value>(
        _ action: String, user: String, identifier: String?, detail: String, _ body: () async throws(MerchantTokenFailure) -> Value
    ) async throws(MerchantTokenFailure) -> Value {
        do {
            let value = try await body()
            await writeAudit(user: user, action: action, identifier: identifier, result: "ok", detail: detail)
            return value
        } catch {
            await writeAudit(
                user: user, action: action, identifier: identifier, result: "refused", detail: "\(detail): \(error.code.rawValue)")
            throw error
        }
    }

    func writeAudit(user: String, action: String, identifier: String?, result: String, detail: String) async {
        guard let audit else { return }
        do {
            try await audit.append(
                AuditLog.Record(
                    time: clock(), user: user, action: action, keyID: nil, merchantID: identifier, result: result, detail: detail))
        } catch {
            logger.error("the audit log could not be written", metadata: ["action": "\(action)", "error": "\(error)"])
        }
    }
}
