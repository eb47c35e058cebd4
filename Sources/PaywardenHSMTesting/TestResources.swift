import Foundation
import PKCS11
import Synchronization

/// What a test opened and has not yet released: HSMs and SoftHSM tokens. The
/// `.releasesTestResources` trait (PaywardenTestTraits) releases them after every test, passed or
/// failed, so a test that throws halfway leaves no open module and no token files behind.
///
/// Each test tracks into a scope of its own (a task-local value the trait sets), so that one test
/// ending releases only what it opened, never what a test running beside it in parallel still uses.
public enum TestResources {
    final class Scope: Sendable {
        let open = Mutex<(hsms: [HSM], tokens: [TestToken], directories: [String], cleanups: [@Sendable () -> Void])>(([], [], [], []))
    }

    /// The running test's scope; outside the trait, one scope shared by all.
    @TaskLocal static var scope = Scope()

    static func track(_ hsm: HSM) {
        scope.open.withLock { $0.hsms.append(hsm) }
    }

    static func track(_ token: TestToken) {
        scope.open.withLock { $0.tokens.append(token) }
    }

    /// A temporary directory to remove when the test ends.
    public static func track(directory: String) {
        scope.open.withLock { $0.directories.append(directory) }
    }

    /// Something else to undo when the test ends (a child process to stop), run first, the last
    /// tracked first.
    public static func track(cleanup: @escaping @Sendable () -> Void) {
        scope.open.withLock { $0.cleanups.append(cleanup) }
    }

    /// Runs `body` with a scope of its own, then releases what it tracked, whether it threw or not.
    public static func withScope(_ body: () async throws -> Void) async throws {
        let scope = Scope()
        do {
            try await $scope.withValue(scope) { try await body() }
        } catch {
            await release(scope)
            throw error
        }
        await release(scope)
    }

    /// Stops what `scope` started, closes every HSM still open in it (closing is idempotent), then
    /// destroys every token and removes every directory.
    private static func release(_ scope: Scope) async {
        let (hsms, tokens, directories, cleanups) = scope.open.withLock { state in
            defer { state = ([], [], [], []) }
            return state
        }
        // Last started, first stopped: a daemon goes before what it depends on (the TPM's
        // resource manager before the TPM).
        for cleanup in cleanups.reversed() { cleanup() }
        for hsm in hsms { await hsm.close() }
        for token in tokens { token.destroy() }
        for directory in directories { try? FileManager.default.removeItem(atPath: directory) }
    }
}
