import Foundation
import PaywardenPrimitives
import PaywardenStorage

extension StorageConformance {
    private typealias C = StorageConformance

    static func webMerchant(_ id: String, domains: [String], state: WebMerchantRecord.State = .active) -> WebMerchantRecord {
        WebMerchantRecord(
            id: id, partnerMerchantName: "Merchant \(id)", encryptTo: "platformintegrator.com.example",
            merchantURL: id.hasPrefix("a") ? "https://example.com" : nil, domainNames: domains, state: state,
            organization: id.hasPrefix("a") ? "org-a" : "org-x",
            domainAssociationSHA256: id.hasPrefix("a") ? String(repeating: "ab", count: 32) : nil,
            createdAt: C.t0, updatedAt: C.t0 + 1)
    }

    static func change(
        _ id: String, organization: OrganizationID?, reserving reservation: WebMerchantRecord? = nil, _ changeID: String,
        at now: TimeInterval = 0, lease: TimeInterval = 300
    ) -> WebMerchantChange {
        WebMerchantChange(
            merchantID: id, organization: organization, reservation: reservation, changeID: changeID, now: C.t0 + now,
            until: C.t0 + now + lease)
    }

    /// `record` written through a change of its own, as the service writes every web merchant.
    static func write(_ record: WebMerchantRecord, to db: any PaywardenDatabase) async throws {
        var reservation = record
        reservation.state = .reserved
        let start = try await db.beginWebMerchantChange(
            change(record.id, organization: record.organization, reserving: reservation, "write-\(record.id)"))
        guard case .started = start else { throw Failure(description: "\(record.id) could not be reserved: \(start)") }
        try require(try await db.finishWebMerchantChange(record, changeID: "write-\(record.id)"), "\(record.id) was not written")
    }

    static let webMerchantChecks: [StorageConformance] = [
        StorageConformance(name: "web merchants: written through a change, listed by id, every field read back") { db in
            try C.require(try await db.webMerchant(id: "abc-1") == nil, "found before saved")
            try C.require(try await db.webMerchants().isEmpty, "listed before saved")
            // The identifier's whole character set survives the round trip.
            let first = webMerchant("abc-1~_+&@$!|,.;", domains: ["shop.example.com", "pay.example.com"])
            let second = webMerchant("XYZ-2", domains: ["xyz.example.org"])
            try await C.write(second, to: db)
            try await C.write(first, to: db)
            try C.require(try await db.webMerchant(id: first.id) == first, "read back differs")
            try C.require(try await db.webMerchants() == [second, first].sorted { $0.id < $1.id }, "the list differs")
            var changed = first
            changed.domainNames = []
            changed.state = .deleted
            changed.merchantURL = nil
            changed.updatedAt = C.t0 + 60
            guard case .started = try await db.beginWebMerchantChange(C.change(first.id, organization: "org-a", "change-1")) else {
                throw Failure(description: "the organisation's own change did not start")
            }
            try C.require(try await db.finishWebMerchantChange(changed, changeID: "change-1"), "not replaced")
            try C.require(try await db.webMerchant(id: first.id) == changed, "not replaced whole")
            try C.require(try await db.webMerchants().count == 2, "replacing added a row")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "web_merchants" }?.rows == 2, "row counts: \(counts)")
        },
        StorageConformance(name: "web merchants: an identifier is reserved for one organisation, held by one change at a time") { db in
            let reservation = webMerchant("a-contested", domains: [], state: .reserved)
            guard
                case .started(let reserved) = try await db.beginWebMerchantChange(
                    C.change("a-contested", organization: "org-a", reserving: reservation, "c1"))
            else { throw Failure(description: "the reservation was not made") }
            try C.require(reserved.state == .reserved && reserved.organization == "org-a" && reserved.domainNames.isEmpty, "\(reserved)")
            // Another organisation's reservation, and the same organisation's second change, are refused while c1 holds it.
            var rivals = reservation
            rivals.organization = "org-b"
            guard
                case .refused(let seen) = try await db.beginWebMerchantChange(
                    C.change("a-contested", organization: "org-b", reserving: rivals, "c2", at: 1))
            else { throw Failure(description: "another organisation took a live reservation") }
            try C.require(seen.organization == "org-a", "the refusal shows \(seen)")
            guard
                case .refused = try await db.beginWebMerchantChange(
                    C.change("a-contested", organization: "org-a", reserving: reservation, "c3", at: 1))
            else { throw Failure(description: "a second change of the organisation started") }
            // Only the change holding it writes it, and once; another organisation's record is never written.
            var active = webMerchant("a-contested", domains: ["contested.example.com"])
            try C.require(!(try await db.finishWebMerchantChange(active, changeID: "c2")), "a refused change wrote the record")
            var stolen = active
            stolen.organization = "org-b"
            try C.require(!(try await db.finishWebMerchantChange(stolen, changeID: "c1")), "the organisation was replaced")
            try C.require(try await db.finishWebMerchantChange(active, changeID: "c1"), "the holding change could not write")
            try C.require(!(try await db.finishWebMerchantChange(active, changeID: "c1")), "a finished change wrote again")
            try C.require(try await db.webMerchant(id: "a-contested") == active, "read back differs")
            // The written identifier stays the organisation's: another's reservation is refused, its own change starts.
            guard
                case .refused = try await db.beginWebMerchantChange(
                    C.change("a-contested", organization: "org-b", reserving: rivals, "c4", at: 2))
            else { throw Failure(description: "another organisation took a registered identifier") }
            guard case .started = try await db.beginWebMerchantChange(C.change("a-contested", organization: nil, "c5", at: 2)) else {
                throw Failure(description: "an admin's change did not start")
            }
            // Abandoned: a registered row is let go unchanged.
            try await db.abandonWebMerchantChange(id: "a-contested", changeID: "c5")
            try C.require(try await db.webMerchant(id: "a-contested") == active, "an abandoned change altered the row")
            active.domainNames = []
            active.state = .deleted
            guard case .started = try await db.beginWebMerchantChange(C.change("a-contested", organization: "org-a", "c6", at: 3)) else {
                throw Failure(description: "the let-go row could not be held again")
            }
            try C.require(try await db.finishWebMerchantChange(active, changeID: "c6"), "the second change could not write")
            guard case .absent = try await db.beginWebMerchantChange(C.change("nobody-here", organization: nil, "c7")) else {
                throw Failure(description: "an unknown identifier was held without a reservation")
            }
        },
        StorageConformance(name: "web merchants: a lapsed change lets go; an abandoned reservation is removed") { db in
            let reservation = webMerchant("a-lapsing", domains: [], state: .reserved)
            _ = try await db.beginWebMerchantChange(C.change("a-lapsing", organization: "org-a", reserving: reservation, "l1", lease: 10))
            guard
                case .refused = try await db.beginWebMerchantChange(
                    C.change("a-lapsing", organization: "org-a", reserving: reservation, "l2", at: 9))
            else { throw Failure(description: "a live change was taken over") }
            // Its process died: once the change lapses, a reservation is anyone's to take.
            var rivals = reservation
            rivals.organization = "org-b"
            guard
                case .started(let taken) = try await db.beginWebMerchantChange(
                    C.change("a-lapsing", organization: "org-b", reserving: rivals, "l3", at: 10))
            else { throw Failure(description: "a lapsed reservation was not taken over") }
            try C.require(taken.organization == "org-b", "taken over for \(String(describing: taken.organization))")
            var late = webMerchant("a-lapsing", domains: ["late.example.com"])
            late.organization = "org-a"
            try C.require(!(try await db.finishWebMerchantChange(late, changeID: "l1")), "the lapsed change wrote")
            try await db.abandonWebMerchantChange(id: "a-lapsing", changeID: "l1")
            try C.require(try await db.webMerchant(id: "a-lapsing") != nil, "a lapsed change removed another's reservation")
            try await db.abandonWebMerchantChange(id: "a-lapsing", changeID: "l3")
            try C.require(try await db.webMerchant(id: "a-lapsing") == nil, "the abandoned reservation is still there")
        },
        StorageConformance(name: "web merchants: a domain is one organisation's and one web merchant's") { db in
            func domain(_ name: String, _ organization: OrganizationID, _ merchant: String?) -> WebMerchantDomainRecord {
                WebMerchantDomainRecord(domain: name, organization: organization, merchantID: merchant, proof: .challenge, provedAt: C.t0)
            }
            try C.require(try await db.claimWebMerchantDomain(domain("d1.example.com", "org-a", "m1")), "the first claim failed")
            try C.require(!(try await db.claimWebMerchantDomain(domain("d1.example.com", "org-b", "m9"))), "a domain was claimed twice")
            func bind(_ organization: OrganizationID, _ merchant: String) async throws -> Bool {
                try await db.bindWebMerchantDomain("d1.example.com", organization: organization, merchantID: merchant)
            }
            try C.require(!(try await bind("org-b", "m9")), "another organisation bound it")
            try C.require(!(try await bind("org-a", "m2")), "a second web merchant bound it")
            try C.require(try await bind("org-a", "m1"), "its own bind failed")
            try C.require(!(try await db.unbindWebMerchantDomain("d1.example.com", merchantID: "m2")), "another web merchant freed it")
            try C.require(try await db.unbindWebMerchantDomain("d1.example.com", merchantID: "m1"), "its web merchant could not free it")
            try C.require(try await bind("org-a", "m2"), "a free domain was not bound")
            // An admin moves a domain only while no web merchant has it.
            var moved = domain("d1.example.com", "org-b", nil)
            moved.proof = .admin
            try C.require(!(try await db.assignWebMerchantDomain(moved)), "a registered domain was moved")
            _ = try await db.unbindWebMerchantDomain("d1.example.com", merchantID: "m2")
            try C.require(try await db.assignWebMerchantDomain(moved), "a free domain was not moved")
            try C.require(try await db.webMerchantDomains(["d1.example.com"]) == [moved], "the move differs")
            var given = domain("d2.example.com", "org-c", nil)
            given.proof = .registeredBefore
            try C.require(try await db.assignWebMerchantDomain(given), "a new domain was not given")
            let found = try await db.webMerchantDomains(["d2.example.com", "d1.example.com", "d3.example.com", "d1.example.com"])
            try C.require(Set(found) == [moved, given] && found.count == 2, "found \(found)")
            try C.require(try await db.allWebMerchantDomains() == [moved, given], "the list differs")
            // Of 20 concurrent claims of one domain, one wins.
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<20 {
                    group.addTask { try await db.claimWebMerchantDomain(domain("d3.example.com", OrganizationID("org-\(n)"), "m\(n)")) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            try C.require(wins == 1, "\(wins) claims of one domain won")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "web_merchant_domains" }?.rows == 3, "row counts: \(counts)")
        },
        StorageConformance(name: "web merchants: each organisation has one domain challenge, never replaced") { db in
            try C.require(try await db.webMerchantDomainChallenge(organization: "org-a", proposed: "ca-1", at: C.t0) == "ca-1", "not made")
            try C.require(try await db.webMerchantDomainChallenge(organization: "org-a", proposed: "ca-2", at: C.t0) == "ca-1", "replaced")
            try C.require(try await db.webMerchantDomainChallenge(organization: "org-b", proposed: "cb-1", at: C.t0) == "cb-1", "shared")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "web_merchant_domain_challenges" }?.rows == 2, "row counts: \(counts)")
        },
        StorageConformance(name: "web merchants: the domain-verification file is stored byte for byte and replaced") { db in
            try C.require(try await db.domainAssociation() == nil, "found before stored")
            // Every byte value, a NUL and a trailing newline included.
            let bytes = (0...255).map(UInt8.init) + [0x00, 0x0A]
            let record = DomainAssociationRecord(content: bytes, sha256: String(repeating: "0f", count: 32), storedAt: C.t0)
            try await db.saveDomainAssociation(record)
            try C.require(try await db.domainAssociation() == record, "read back differs")
            let next = DomainAssociationRecord(
                content: Array("7B22...".utf8), sha256: String(repeating: "1e", count: 32), storedAt: C.t0 + 5)
            try await db.saveDomainAssociation(next)
            try C.require(try await db.domainAssociation() == next, "not replaced")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "domain_associations" }?.rows == 1, "row counts: \(counts)")
        },
    ]
}
