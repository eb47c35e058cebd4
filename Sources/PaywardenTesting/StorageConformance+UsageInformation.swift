import Foundation
import PaywardenStorage

extension StorageConformance {
    /// Usage information: one record per merchant token, replaced whole by a compare-and-set on the
    /// revision read, deleted; one sender key per merchant.
    static let usageInformationChecks: [StorageConformance] = [
        StorageConformance(name: "usage information: saved, replaced whole, read back, deleted") { db in
            let waiting = UsageInformationRecord(
                merchantTokenID: "DNITHE0001", merchantID: "merchant.com.example", organization: "org-a", state: .awaitingKey,
                package: [0x50, 0x4B, 0x03, 0x04, 0x00, 0xFF], packageResponse: nil, authenticationTokenHash: nil,
                updatedAt: StorageConformance.t0)
            try require(try await db.saveUsageInformation(waiting, replacing: nil), "not inserted")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0001") == waiting, "read back differs")
            var published = waiting
            published.state = .published
            published.package = [0x50, 0x4B, 0x05, 0x06]
            published.packageResponse = Array(#"{"data":"AAAA"}"#.utf8)
            published.authenticationTokenHash = (0..<32).map { UInt8($0) }
            published.updatedAt = StorageConformance.t0 + 5
            published.revision = 2
            try require(try await db.saveUsageInformation(published, replacing: waiting), "not replaced")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0001") == published, "not replaced whole")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0002") == nil, "an unknown token found")
            try require(try await db.deleteUsageInformation(merchantTokenID: "DNITHE0001"), "not deleted")
            try require(!(try await db.deleteUsageInformation(merchantTokenID: "DNITHE0001")), "deleted twice")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0001") == nil, "still there")
        },
        StorageConformance(name: "usage information: every write is a compare-and-set on the revision read") { db in
            let first = UsageInformationRecord(
                merchantTokenID: "DNITHE0003", merchantID: "merchant.com.example", organization: "org-a", state: .published,
                package: [1], packageResponse: [2], authenticationTokenHash: Array(repeating: 3, count: 32),
                updatedAt: StorageConformance.t0)
            try require(try await db.saveUsageInformation(first, replacing: nil), "not inserted")
            // Another organisation that read nothing (it raced the first) inserts nothing.
            var rival = first
            rival.organization = "org-b"
            try require(!(try await db.saveUsageInformation(rival, replacing: nil)), "an insert replaced a record")
            // Two writers that read revision 1: the first wins, the second writes nothing.
            var newer = first
            newer.package = [4]
            newer.revision = 2
            var overtaken = first
            overtaken.package = [5]
            overtaken.revision = 2
            try require(try await db.saveUsageInformation(newer, replacing: first), "the first writer lost")
            try require(!(try await db.saveUsageInformation(overtaken, replacing: first)), "a stale writer replaced the newer record")
            try require(!(try await db.deleteUsageInformation(replacing: first)), "a stale delete removed the newer record")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0003") == newer, "the newer record was changed")
            try require(try await db.deleteUsageInformation(replacing: newer), "the record read was not deleted")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0003") == nil, "still there")
            // Gone (an unlink): a writer that read it recreates nothing.
            var late = newer
            late.revision = 3
            try require(!(try await db.saveUsageInformation(late, replacing: newer)), "a deleted record was written again")
        },
        StorageConformance(name: "usage information: one sender key per merchant, never replaced") { db in
            let wrapped = UsageInformationSenderKeyRecord(
                merchantID: "merchant.com.example", custody: "wrapped", hsmKeyID: "0a1b", publicKey: [4] + Array(repeating: 7, count: 96),
                wrappedSeed: Array(repeating: 9, count: 40), wrapPath: "aes-key-wrap-pad", createdAt: StorageConformance.t0)
            try await db.createUsageInformationSenderKey(wrapped)
            try require(try await db.usageInformationSenderKey(merchantID: "merchant.com.example") == wrapped, "read back differs")
            var other = wrapped
            other.custody = "hsm"
            other.wrappedSeed = nil
            other.wrapPath = nil
            try await requireError(.conflict, "a second key for the merchant") { try await db.createUsageInformationSenderKey(other) }
            try require(try await db.usageInformationSenderKey(merchantID: "merchant.com.example") == wrapped, "replaced")
            other.merchantID = "merchant.com.other"
            try await db.createUsageInformationSenderKey(other)
            try require(try await db.usageInformationSenderKey(merchantID: "merchant.com.other") == other, "the in-HSM key differs")
        },
    ]
}
