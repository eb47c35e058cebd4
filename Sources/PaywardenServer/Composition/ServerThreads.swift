import NIOCore
import NIOPosix

/// The threads of `paywarden serve`: NIO event loops, which do the HTTP, run every task and, with
/// inline HSM dispatch, the HSM calls too; and the HSM's worker threads, which do the HSM calls
/// with pool dispatch (a module across a network).
///
/// Swift concurrency's global executor is moved onto the event loops, so a request's handler
/// runs on the thread that read it and no third pool of threads competes for the cores. One loop
/// per core by default, one with `PAYWARDEN_HSM_DISPATCH=pool`, where the work runs on the
/// workers (`EarlySettings`; docs/architecture.md, "Design notes", has the measurements).
public enum ServerThreads {
    /// Sizes NIO's shared event loop group and makes it the global executor. Call once, from
    /// the main thread, before anything else uses Swift concurrency or NIO. Returns false when
    /// NIO could not take the executor over (the service then runs on Swift's own pool).
    public static func install(eventLoops: Int) -> Bool {
        NIOSingletons.groupLoopCountSuggestion = eventLoops
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
