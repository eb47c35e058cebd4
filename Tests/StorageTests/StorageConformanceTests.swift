import Foundation
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenStorageSQLite
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// The drivers the conformance suite runs against: each check on a fresh, migrated database.
enum Driver: String, CaseIterable, CustomTestStringConvertible {
    case memory
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    func withDatabase(_ body: (any PaywardenDatabase) async throws -> Void) async throws {
        switch self {
        case .memory:
            try await body(InMemoryDatabase())
        case .sqlite:
            let directory = NSTemporaryDirectory() + "paywarden-sqlite-\(UUID().uuidString.prefix(8))"
            TestResources.track(directory: directory)
            let database = try SQLiteDriver.open(path: directory + "/paywarden.sqlite")
            _ = try await database.migrate()
            try await body(database)
        case .postgres:
            try await TestPostgres.shared().withDatabase { try await body($0) }
        }
    }
}

@Suite(.releasesTestResources)
struct StorageConformanceTests {
    @Test(arguments: Driver.allCases, StorageConformance.all)
    func conforms(driver: Driver, check: StorageConformance) async throws {
        try await driver.withDatabase { database in try await check.run(on: database) }
    }
}
