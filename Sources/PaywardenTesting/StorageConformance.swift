import Foundation
import PaywardenStorage

/// One behaviour every storage driver must have, checked against a real database of each kind
/// (memory, SQLite, PostgreSQL) by the storage tests. A check throws ``Failure`` naming what
/// differed.
public struct StorageConformance: Sendable, CustomStringConvertible {
    public let name: String
    let body: @Sendable (any PaywardenDatabase) async throws -> Void

    public var description: String { name }

    public func run(on database: any PaywardenDatabase) async throws {
        try await body(database)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    static func require(_ condition: Bool, _ what: @autoclosure () -> String) throws {
        if !condition { throw Failure(description: what()) }
    }

    static func requireError(
        _ category: StorageError.Category, _ what: String, _ body: () async throws -> Void
    ) async throws {
        do {
            try await body()
        } catch let error as StorageError {
            try require(error.category == category, "\(what): \(error.category) (\(error)), expected \(category)")
            return
        }
        throw Failure(description: "\(what) succeeded; expected a \(category) error")
    }

    /// A whole second, so every driver's millisecond times compare equal.
    static let t0 = Date(timeIntervalSince1970: 1_795_000_000)

    static func sealed(_ seed: UInt8, key: String = "kek-1") -> SealedPayload {
        SealedPayload(
            keyID: key, wrapPath: "aes-key-wrap-pad", wrappedKey: Array(repeating: seed, count: 40),
            ciphertext: (0..<60).map { UInt8(truncatingIfNeeded: Int($0) &+ Int(seed)) }, version: 1)
    }

    static func transaction(_ n: Int) -> [UInt8] {
        (0..<32).map { UInt8(truncatingIfNeeded: n &* 31 &+ $0) }
    }

    /// Every check, by name.
    public static let all: [StorageConformance] =
        replayChecks + oneWriteChecks + registrationChecks + registrationRotationChecks + tokenChecks + tokenRotationChecks + paypageChecks
        + eventChecks + merchantTokenChecks + keyRecordChecks + migrationChecks + webMerchantChecks + usageInformationChecks
}
