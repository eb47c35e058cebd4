import Foundation
import PaywardenStorage

/// `paywarden-bench ledger-footprint COUNT`: the resident memory one replay-ledger entry of the
/// in-memory database (`memory:`) takes, measured as `make soak` needs it: this process's VmRSS
/// before and after COUNT claims of random 32-byte transaction ids (Apple's length, and the
/// forged tokens'), claimed as the server claims them. Prints `bytes per entry: N`.
enum LedgerFootprint {
    static let usage = "usage: paywarden-bench ledger-footprint COUNT"

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 1, let count = Int(arguments[0]), count > 0 else { throw BenchError(usage) }
        let database = InMemoryDatabase()
        let now = Date()
        let expiry = now.addingTimeInterval(7200)
        var generator = SystemRandomNumberGenerator()
        // One claim first, so the dictionary's first storage and the code paths are not counted.
        _ = try await database.claimTransaction(transactionID(&generator), until: expiry, now: now)
        let before = try residentKilobytes()
        for _ in 0..<count {
            guard try await database.claimTransaction(transactionID(&generator), until: expiry, now: now) else {
                throw BenchError("a random transaction id was claimed twice")
            }
        }
        let after = try residentKilobytes()
        print("entries: \(count)")
        print("bytes per entry: \(max(0, after - before) * 1024 / count)")
    }

    private static func transactionID(_ generator: inout SystemRandomNumberGenerator) -> [UInt8] {
        (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// This process's VmRSS, in kB.
    private static func residentKilobytes() throws -> Int {
        guard let kilobytes = ProcessCPU.residentKilobytes(getpid()) else { throw BenchError("no VmRSS in /proc/self/status") }
        return kilobytes
    }
}
