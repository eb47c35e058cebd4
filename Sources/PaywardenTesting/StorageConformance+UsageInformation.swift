import Foundation
import PaywardenStorage

extension StorageConformance {
    /// Usage information: one record per merchant token, replaced whole, deleted; one sender key per merchant.
    static let usageInformationChecks: [StorageConformance] = [
        StorageConformance(name: "usage information: saved, replaced whole, read back, deleted") { db in
            let waiting = UsageInformationRecord(
                merchantTokenID: "DNITHE0001", merchantID: "merchant.com.example", organization: "org-a", state: .awaitingKey,
                package: [0x50, 0x4B, 0x03, 0x04, 0x00, 0xFF], packageResponse: nil, authenticationTokenHash: nil,
                updatedAt: StorageConformance.t0)
            try await db.saveUsageInformation(waiting)
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0001") == waiting, "read back differs")
            var published = waiting
            published.state = .published
            published.package = [0x50, 0x4B, 0x05, 0x06]
            published.packageResponse = Array(#"{"data":"AAAA"}"#.utf8)
            published.authenticationTokenHash = (0..<32).map { UInt8($0) }
            published.updatedAt = StorageConformance.t0 + 5
            try await db.saveUsageInformation(published)
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0001") == published, "not replaced whole")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0002") == nil, "an unknown token found")
            try require(try await db.deleteUsageInformation(merchantTokenID: "DNITHE0001"), "not deleted")
            try require(!(try await db.deleteUsageInformation(merchantTokenID: "DNITHE0001")), "deleted twice")
            try require(try await db.usageInformation(merchantTokenID: "DNITHE0001") == nil, "still there")
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
