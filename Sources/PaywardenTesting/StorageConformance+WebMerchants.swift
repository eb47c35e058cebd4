import Foundation
import PaywardenStorage

extension StorageConformance {
    private typealias C = StorageConformance

    static func webMerchant(_ id: String, domains: [String], state: WebMerchantRecord.State = .active) -> WebMerchantRecord {
        WebMerchantRecord(
            id: id, partnerMerchantName: "Merchant \(id)", encryptTo: "platformintegrator.com.example",
            merchantURL: id.hasPrefix("a") ? "https://example.com" : nil, domainNames: domains, state: state,
            organization: id.hasPrefix("a") ? "org-a" : nil,
            domainAssociationSHA256: id.hasPrefix("a") ? String(repeating: "ab", count: 32) : nil,
            createdAt: C.t0, updatedAt: C.t0 + 1)
    }

    static let webMerchantChecks: [StorageConformance] = [
        StorageConformance(name: "web merchants: saved, replaced by id, listed by id, every field read back") { db in
            try C.require(try await db.webMerchant(id: "abc-1") == nil, "found before saved")
            try C.require(try await db.webMerchants().isEmpty, "listed before saved")
            // The identifier's whole character set survives the round trip.
            let first = webMerchant("abc-1~_+&@$!|,.;", domains: ["shop.example.com", "pay.example.com"])
            let second = webMerchant("XYZ-2", domains: ["xyz.example.org"])
            try await db.saveWebMerchant(second)
            try await db.saveWebMerchant(first)
            try C.require(try await db.webMerchant(id: first.id) == first, "read back differs")
            try C.require(try await db.webMerchants() == [second, first].sorted { $0.id < $1.id }, "the list differs")
            var changed = first
            changed.domainNames = []
            changed.state = .deleted
            changed.merchantURL = nil
            changed.updatedAt = C.t0 + 60
            try await db.saveWebMerchant(changed)
            try C.require(try await db.webMerchant(id: first.id) == changed, "not replaced")
            try C.require(try await db.webMerchants().count == 2, "replacing added a row")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "web_merchants" }?.rows == 2, "row counts: \(counts)")
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
