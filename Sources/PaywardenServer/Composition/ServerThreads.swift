import NIOCore
import NIOPosix

/// The threads of `paywarden serve`: the HSM's worker threads, which do the decryptions, and
/// NIO event loops, which do the HTTP and run every other task.
///
/// Swift concurrency's global executor is moved onto the event loops, so a request's handler
/// runs on the thread that read it and no third pool of threads competes for the cores. A
/// request is a few kilobytes of I/O and almost all of its work runs on the HSM's workers, so
/// one event loop is the default (docs/architecture.md, "Design notes", has the measurements).
public enum ServerThreads {
    /// Sizes NIO's shared event loop group and makes it the global executor. Call once, from
    /// the main thread, before anything else uses Swift concurrency or NIO. Returns false when
    /// NIO could not take the executor over (the service then runs on Swift's own pool).
    public static func install(eventLoops: Int) -> Bool {
        NIOSingletons.groupLoopCountSuggestion = eventLoops
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
