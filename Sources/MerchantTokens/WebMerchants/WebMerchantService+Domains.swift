import Crypto
import Foundation
import OutboundTLS
import PaywardenPrimitives
import PaywardenStorage

/// Who may register a domain (docs/web-merchants.md): a domain is one organisation's, from the
/// first time it proves it controls the domain (its challenge served under the domain's
/// well-known path) or an admin gives it to it, and one web merchant's at a time. Paywarden serves
/// the integrator's one verification file for every host, so a domain that points its well-known
/// path here would pass Apple's check for any tenant: without this, the first organisation to
/// name a domain would hold it, and its owner get 409.
extension WebMerchantService {
    /// The organisation's challenge, made on first use: what it serves as a line of
    /// `https://DOMAIN/.well-known/paywarden-domain-challenge` to prove a domain.
    public func domainChallenge(organization: OrganizationID) async throws(MerchantTokenFailure) -> String {
        var random = SystemRandomNumberGenerator()
        let proposed =
            "paywarden-domain-challenge="
            + Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        do throws(StorageError) {
            return try await store.webMerchantDomainChallenge(organization: organization, proposed: proposed, at: clock())
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// The domains the organisation holds (every organisation's, for an admin), by domain.
    public func domains(organization: OrganizationID?) async throws(MerchantTokenFailure) -> [WebMerchantDomainRecord] {
        do throws(StorageError) {
            let all = try await store.allWebMerchantDomains()
            guard let organization else { return all }
            return all.filter { $0.organization == organization }
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// An admin's decision: `domain` becomes `organization`'s without a challenge (a domain the
    /// platform vouches for, or one another organisation claimed first and must give up). Refused
    /// while a web merchant has it registered: unregister it there first.
    public func approveDomain(_ domain: String, organization: OrganizationID, user: String) async throws(MerchantTokenFailure)
        -> WebMerchantDomainRecord
    {
        let domain = domain.lowercased()
        guard WebMerchantField.isDomainName(domain) else {
            throw MerchantTokenFailure(
                .invalidRequest, "\(domain) is not a fully qualified domain name (no scheme, port, path, wildcard or IP address)")
        }
        guard !organization.rawValue.isEmpty else { throw MerchantTokenFailure(.invalidRequest, "the organisation is empty") }
        let record = WebMerchantDomainRecord(domain: domain, organization: organization, merchantID: nil, proof: .admin, provedAt: clock())
        return try await audited("web-merchants.approve-domain", user: user, identifier: nil, detail: "\(domain) for \(organization)") {
            () async throws(MerchantTokenFailure) in
            let assigned: Bool
            do throws(StorageError) {
                assigned = try await store.assignWebMerchantDomain(record)
            } catch {
                throw MerchantTokenFailure(error)
            }
            guard assigned else {
                let holder = try? await store.webMerchantDomains([domain]).first
                throw MerchantTokenFailure(
                    .webMerchantDomainTaken,
                    "\(domain) is registered for web merchant \(holder?.merchantID ?? "?") of organisation "
                        + "\(holder?.organization ?? "?") now; unregister it there first")
            }
            return record
        }
    }

    /// Proves, for an organisation's key, each of `domains` no organisation holds yet (an admin
    /// vouches for its own); refuses one another organisation holds. Returns the domains proved
    /// now, which the registration may then claim.
    func proveNewDomains(_ domains: [String], organization: OrganizationID, actor: WebMerchantActor) async throws(MerchantTokenFailure)
        -> Set<String>
    {
        let held: [WebMerchantDomainRecord]
        do throws(StorageError) {
            held = try await store.webMerchantDomains(domains)
        } catch {
            throw MerchantTokenFailure(error)
        }
        if let other = held.first(where: { $0.organization != organization }) { throw Self.taken(other.domain) }
        let unheld = domains.filter { domain in !held.contains { $0.domain == domain } }
        guard actor == .organizationKey, !unheld.isEmpty else { return [] }
        guard let domainCheck else {
            throw Self.unproven(unheld[0], organization: organization, because: "this service checks no domain")
        }
        let challenge = try await domainChallenge(organization: organization)
        // A few at once: each read may take its whole time, and a registration names up to 99 domains.
        let refusals = await withTaskGroup(of: (String, String?).self) { group in
            var pending = unheld[...]
            var refusals: [(String, String)] = []
            func next() {
                guard let domain = pending.popFirst() else { return }
                group.addTask {
                    do throws(DomainCheckFailure) {
                        let served = try await domainCheck.servedChallenges(domain: domain)
                        return (domain, served.contains(challenge) ? nil : "it does not serve the organisation's challenge")
                    } catch {
                        return (domain, error.reason)
                    }
                }
            }
            for _ in 0..<Self.concurrentDomainChecks { next() }
            for await (domain, refusal) in group {
                if let refusal { refusals.append((domain, refusal)) }
                next()
            }
            return refusals
        }
        // The first in the request's order, so the refusal names the same domain every time.
        if let (domain, reason) = unheld.lazy.compactMap({ domain in refusals.first { $0.0 == domain } }).first {
            throw Self.unproven(domain, organization: organization, because: reason)
        }
        return Set(unheld)
    }

    /// Domain reads made at once for one registration.
    static let concurrentDomainChecks = 8

    /// Binds each of `domains` to web merchant `identifier` for `organization`, claiming those
    /// nobody holds (proved now, or an admin's); returns the ones bound now, which an abandoned
    /// registration frees again. Every step is a compare-and-set: a domain another request claimed
    /// or bound meanwhile is refused as taken.
    func bind(
        _ domains: [String], to identifier: String, organization: OrganizationID, proven: Set<String>, actor: WebMerchantActor, now: Date
    ) async throws(MerchantTokenFailure) -> [String] {
        var bound: [String] = []
        do throws(MerchantTokenFailure) {
            for domain in domains {
                if try await bindOne(domain, identifier, organization, proven, actor, now) { bound.append(domain) }
            }
        } catch {
            await unbind(bound, from: identifier)
            throw error
        }
        return bound
    }

    /// True when the domain was bound to `identifier` now, false when it already was.
    private func bindOne(
        _ domain: String, _ identifier: String, _ organization: OrganizationID, _ proven: Set<String>, _ actor: WebMerchantActor,
        _ now: Date
    ) async throws(MerchantTokenFailure) -> Bool {
        // Twice at most: a row that changed between the read and the write is read again once.
        for _ in 0..<2 {
            if let held = try await stored({ () async throws(StorageError) in try await store.webMerchantDomains([domain]).first }) {
                guard held.organization == organization else { throw Self.taken(domain) }
                if held.merchantID == identifier { return false }
                if let other = held.merchantID {
                    throw MerchantTokenFailure(
                        .webMerchantDomainTaken,
                        "\(domain) is registered for the organisation's web merchant \(other); a domain belongs to one web merchant: "
                            + "unregister it there first")
                }
                if try await stored({ () async throws(StorageError) in
                    try await store.bindWebMerchantDomain(domain, organization: organization, merchantID: identifier)
                }) {
                    return true
                }
                continue
            }
            guard actor == .admin || proven.contains(domain) else {
                throw Self.unproven(domain, organization: organization, because: "it was given up while this request ran")
            }
            let claim = WebMerchantDomainRecord(
                domain: domain, organization: organization, merchantID: identifier, proof: actor == .admin ? .admin : .challenge,
                provedAt: now)
            if try await stored({ () async throws(StorageError) in try await store.claimWebMerchantDomain(claim) }) { return true }
        }
        throw MerchantTokenFailure(.concurrentChange, "\(domain) changed hands twice while it was being registered; repeat the request")
    }

    /// A store call, its failure as the service's.
    private func stored<Value>(_ call: () async throws(StorageError) -> Value) async throws(MerchantTokenFailure) -> Value {
        do throws(StorageError) {
            return try await call()
        } catch {
            throw MerchantTokenFailure(error)
        }
    }

    /// Frees each of `domains` of web merchant `identifier`; a failure is logged (the domains stay
    /// the organisation's, bound until the same web merchant registers or unregisters them).
    func unbind(_ domains: [String], from identifier: String) async {
        for domain in domains {
            do throws(StorageError) {
                _ = try await store.unbindWebMerchantDomain(domain, merchantID: identifier)
            } catch {
                logger.error(
                    "a domain could not be freed of its web merchant", metadata: ["web-merchant": "\(identifier)", "domain": "\(domain)"])
            }
        }
    }

    static func taken(_ domain: String) -> MerchantTokenFailure {
        MerchantTokenFailure(
            .webMerchantDomainTaken,
            "\(domain) is another organisation's here; a domain belongs to one organisation (an admin moves one: paywarden "
                + "web-merchants approve-domain)")
    }

    static func unproven(_ domain: String, organization: OrganizationID, because reason: String) -> MerchantTokenFailure {
        MerchantTokenFailure(
            .webMerchantDomainUnproven,
            "\(domain) is not yet organisation \(organization)'s: serve its challenge (GET /v1/apple-pay/web-merchant-domains) as a "
                + "line of https://\(domain)\(DomainChallenge.path) and register again, or ask an admin to approve the domain "
                + "(paywarden web-merchants approve-domain); \(reason)")
    }
}
