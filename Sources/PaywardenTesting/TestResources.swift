import Foundation
import PKCS11
import Synchronization

/// What a test opened and has not yet released: HSMs and SoftHSM tokens. The
/// `.releasesTestResources` trait (PaywardenTestTraits) releases them after every test, passed or
/// failed, so a test that throws halfway leaves no open module and no token files behind.
public enum TestResources {
    private static let open = Mutex<(hsms: [HSM], tokens: [TestToken], directories: [String], cleanups: [@Sendable () -> Void])>(
        ([], [], [], []))

    static func track(_ hsm: HSM) {
        open.withLock { $0.hsms.append(hsm) }
    }

    static func track(_ token: TestToken) {
        open.withLock { $0.tokens.append(token) }
    }

    /// A temporary directory to remove when the test ends.
    public static func track(directory: String) {
        open.withLock { $0.directories.append(directory) }
    }

    /// Something else to undo when the test ends (a child process to stop), run first.
    public static func track(cleanup: @escaping @Sendable () -> Void) {
        open.withLock { $0.cleanups.append(cleanup) }
    }

    /// Closes every HSM still open (closing is idempotent), then destroys every token.
    public static func releaseAll() async {
        let (hsms, tokens, directories, cleanups) = open.withLock { state in
            defer { state = ([], [], [], []) }
            return state
        }
        for cleanup in cleanups { cleanup() }
        for hsm in hsms { await hsm.close() }
        for token in tokens { token.destroy() }
        for directory in directories { try? FileManager.default.removeItem(atPath: directory) }
    }
}
