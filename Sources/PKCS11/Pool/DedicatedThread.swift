import Foundation

/// Runs blocking PKCS#11 work on a thread of its own, never on Swift's cooperative pool or an
/// event loop, and returns its result to the awaiting task.
enum DedicatedThread {
    static func run<R: Sendable>(name: String, _ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await withUnsafeThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.name = name
            thread.start()
        }
    }
}
