import Foundation
import NIOCore
import NIOPosix

/// The threads of `paywarden serve`: the HSM's worker threads, which do the decryptions, and
/// NIO event loops, which do the HTTP and run every other task.
///
/// Swift concurrency's global executor is moved onto the event loops, so a request's handler
/// runs on the thread that read it and no third pool of threads competes for the cores. A
/// request is a few kilobytes of I/O and almost all of its work runs on the HSM's workers, so
/// one event loop is the default (README, "Design notes", has the measurements).
public enum ServerThreads {
    /// `PAYWARDEN_EVENT_LOOP_THREADS`: event loop threads (default 1). Read from the
    /// environment only, because the loops must exist before any configuration is read.
    public static let environmentKey = "PAYWARDEN_EVENT_LOOP_THREADS"

    /// Sizes NIO's shared event loop group and makes it the global executor. Call once, from
    /// the main thread, before anything else uses Swift concurrency or NIO. Returns false when
    /// NIO could not take the executor over (the service then runs on Swift's own pool).
    public static func install(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ServerConfigurationError) -> Bool {
        var threads = 1
        if let value = environment[environmentKey], !value.isEmpty {
            guard let count = Int(value), (1...256).contains(count) else {
                throw ServerConfigurationError("\(environmentKey) must be a number from 1 to 256")
            }
            threads = count
        }
        NIOSingletons.groupLoopCountSuggestion = threads
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
