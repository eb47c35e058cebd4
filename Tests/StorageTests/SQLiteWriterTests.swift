import Foundation
import GRDB
import PaywardenStorage
import PaywardenStorageSQL
import PaywardenTestTraits
import PaywardenTesting
import Synchronization
import Testing

@testable import PaywardenStorageSQLite

/// The SQLite writer's promises: a write is decided when answered and durable only once the
/// log has been synced after its commit; a sync that fails stops every write; another process's
/// lock is waited for off the caller's thread; the log starts over once it outgrows its bound.
@Suite(.releasesTestResources)
struct SQLiteWriterTests {
    private func temporaryPath() -> String {
        let directory = NSTemporaryDirectory() + "paywarden-sqlite-writer-\(UUID().uuidString.prefix(8))"
        TestResources.track(directory: directory)
        return directory + "/paywarden.sqlite"
    }

    private func open(
        _ path: String, logSizeBound: Int = 64 << 20, syncLog: (@Sendable (WriteAheadLogFile) -> String?)? = nil
    ) async throws -> SQLDatabase<SQLiteDriver> {
        let database = SQLDatabase(
            try SQLiteDriver(path: path, busyTimeout: 5, readers: 4, logSizeBound: logSizeBound, syncLog: syncLog))
        _ = try await database.migrate()
        return database
    }

    private static func id(_ n: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt64(n).bigEndian) { Array($0) } + [UInt8](repeating: 0x5A, count: 24)
    }

    @Test("the writer commits without syncing (synchronous=NORMAL) and syncs the log itself before a claim is durable")
    func aClaimIsDurableOnlyAfterItsSync() async throws {
        let gate = SyncGate()
        let database = try await open(temporaryPath()) { log in
            gate.waitUntilOpen()
            return log.sync()
        }
        // 1 is NORMAL: the commit writes the log; the writer's own fdatasync makes it durable.
        #expect(try await database.engine.execute("PRAGMA synchronous", [], writes: true) == [[.integer(1)]])
        gate.close()
        let claim = try await database.claim(Self.id(1), until: Date() + 300, now: Date())
        #expect(claim.claimed && claim.ticket > .durable, "decided at once, with a batch to wait for")
        let durable = Atomic<Bool>(false)
        let waiter = Task {
            try await database.awaitDurable(claim.ticket)
            durable.store(true, ordering: .relaxed)
        }
        try await Task.sleep(for: .milliseconds(200))
        let durableBeforeSync = durable.load(ordering: .relaxed)
        #expect(!durableBeforeSync, "durable before the log was synced")
        #expect(!(try await database.claim(Self.id(1), until: Date() + 300, now: Date()).claimed), "the claim was not final when answered")
        gate.open()
        try await waiter.value
        let durableAfterSync = durable.load(ordering: .relaxed)
        #expect(durableAfterSync)
        #expect(database.engine.writeStatistics.syncs >= 1)
    }

    @Test("a sync that fails fails its waiters, and every write after it until the database is reopened")
    func aFailedSyncStopsWriting() async throws {
        let path = temporaryPath()
        let failing = Atomic<Bool>(false)
        let database = try await open(path) { log in failing.load(ordering: .relaxed) ? "fdatasync: Input/output error" : log.sync() }
        #expect(try await database.claimTransaction(Self.id(2), until: Date() + 300, now: Date()))
        failing.store(true, ordering: .relaxed)
        let claim = try await database.claim(Self.id(3), until: Date() + 300, now: Date())
        await #expect(throws: StorageError.self) { try await database.awaitDurable(claim.ticket) }
        do {
            _ = try await database.claim(Self.id(4), until: Date() + 300, now: Date())
            Issue.record("a write was taken after a failed sync")
        } catch {
            #expect(error.category == .unavailable && error.message.contains("restart"), "\(error)")
        }
    }

    @Test("a batch that filled while a sync failed is never durable, nor is the failed one, though a later sync would succeed")
    func noBatchIsDurableAfterAFailedSync() async throws {
        let gate = SyncGate()
        let syncs = Atomic<Int>(0)
        let database = try await open(temporaryPath()) { log in
            gate.waitUntilOpen()
            // The first sync fails (its pages may be gone); every later one would succeed.
            return syncs.add(1, ordering: .relaxed).newValue == 1 ? "fdatasync: Input/output error" : log.sync()
        }
        gate.close()
        let first = try await database.claim(Self.id(6), until: Date() + 300, now: Date())
        // The syncer is in the first batch's sync: the next claim opens the batch after it.
        while database.engine.writeStatistics.batches < 1 { try await Task.sleep(for: .milliseconds(5)) }
        let second = try await database.claim(Self.id(7), until: Date() + 300, now: Date())
        #expect(first.claimed && second.claimed && second.ticket > first.ticket)
        gate.open()
        await #expect(throws: StorageError.self, "the failed sync's batch") { try await database.awaitDurable(first.ticket) }
        await #expect(throws: StorageError.self, "the batch after it") { try await database.awaitDurable(second.ticket) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(syncs.load(ordering: .relaxed) == 1, "the syncer went on syncing after a failed sync")
    }

    @Test("a write that finds another process's lock waits for it off its caller's thread")
    func anotherProcessesLockIsWaitedForOffTheCallersThread() async throws {
        let path = temporaryPath()
        let database = try await open(path)
        // Another process's transaction (an admin command): a connection of its own holding the lock.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: path, configuration: configuration)
        try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
        let written = Atomic<Bool>(false)
        let write = Task {
            let claimed = try await database.claimTransaction(Self.id(5), until: Date() + 300, now: Date())
            written.store(true, ordering: .relaxed)
            return claimed
        }
        try await Task.sleep(for: .milliseconds(300))
        let writtenThroughLock = written.load(ordering: .relaxed)
        #expect(!writtenThroughLock, "written through another process's lock")
        // Reads go on meanwhile, on the callers' threads.
        #expect(try await database.paypages().isEmpty)
        try await other.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
        #expect(try await write.value)
        #expect(database.engine.writeStatistics.lockWaits == 1)
    }

    @Test("a write refused by a constraint leaves its batch to commit, and the others in it are durable")
    func aRefusedWriteLeavesItsBatch() async throws {
        let database = try await open(temporaryPath())
        let record = PaypageRecord(
            id: "constraint", organization: "org", merchantIdentifiers: ["merchant.com.example"], reportGroups: [], tokenFormat: "T",
            createdAt: Date())
        try await database.createPaypage(record)
        let claim = try await database.claim(Self.id(6), until: Date() + 300, now: Date())
        await #expect(throws: StorageError.self) { try await database.createPaypage(record) }
        try await database.awaitDurable(claim.ticket)
        #expect(try await database.isClaimed(Self.id(6), now: Date()))
    }

    @Test("the log starts over once it outgrows its bound, under writes that never pause")
    func theLogIsBounded() async throws {
        let bound = 256 << 10
        let path = temporaryPath()
        let database = try await open(path, logSizeBound: bound)
        let stop = Atomic<Bool>(false)
        let maintenance = Task {
            while !stop.load(ordering: .relaxed) {
                await database.performMaintenance()
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        var largest = 0
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for n in 0..<500 {
                        _ = try await database.claimTransaction(Self.id(writer * 1000 + n + 10), until: Date() + 300, now: Date())
                    }
                }
            }
            for try await _ in group { largest = max(largest, database.engine.writeStatistics.logSize) }
        }
        stop.store(true, ordering: .relaxed)
        await maintenance.value
        let statistics = database.engine.writeStatistics
        print("log bound \(bound) bytes, largest seen \(largest): \(statistics)")
        #expect(statistics.heldCheckpoints >= 1, "\(statistics)")
        #expect(statistics.logSize <= 2 * bound, "the log is \(statistics.logSize) bytes, its bound \(bound): \(statistics)")
        #expect(statistics.batches < statistics.writes, "no two writes shared a commit: \(statistics)")
        #expect(try await database.rowCounts().first { $0.table == "replay_ledger" }?.rows == 4000)
    }
}

/// A gate the syncer waits at, for tests that hold a sync.
private final class SyncGate: Sendable {
    private let condition = NSCondition()
    private let closed = Mutex(false)

    func close() { closed.withLock { $0 = true } }

    func open() {
        closed.withLock { $0 = false }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    func waitUntilOpen() {
        condition.lock()
        while closed.withLock({ $0 }) { condition.wait() }
        condition.unlock()
    }
}
