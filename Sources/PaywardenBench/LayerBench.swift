import Foundation
import PKCS11

/// Measures operations per wall second through Paywarden's PKCS#11 layer: enough tasks in
/// flight to keep every worker busy, for a fixed time.
struct LayerBench {
    let hsm: HSM

    /// - Parameter onWorkers: run the calling tasks on the HSM's workers (no hop per call)
    ///   rather than on the cooperative pool (one hop each way per call).
    func rate(seconds: Double, inFlight: Int, onWorkers: Bool, _ operation: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1000))
        let start = clock.now
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<inFlight {
                group.addTask(executorPreference: onWorkers ? hsm.executor : nil) {
                    var count = 0
                    while clock.now < deadline {
                        try await operation(task &+ count)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = clock.now - start
        return Double(total) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
