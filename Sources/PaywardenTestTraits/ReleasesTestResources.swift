import PaywardenHSMTesting
import Testing

/// Releases what each test opened (HSMs, SoftHSM tokens) when it ends, passed or failed: only
/// what that test opened, so suites running in parallel do not release each other's.
public struct ReleasesTestResources: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope wraps its tests; only the innermost (a test) releases.
        guard !test.isSuite else { return try await function() }
        try await TestResources.withScope(function)
    }
}

extension Trait where Self == ReleasesTestResources {
    /// Close every HSM and destroy every SoftHSM token a test opened, however it ends.
    public static var releasesTestResources: Self { ReleasesTestResources() }
}
