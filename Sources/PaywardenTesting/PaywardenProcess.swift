import Foundation

/// Runs the built `paywarden` executable as an operator would, with its own environment.
public struct PaywardenProcess: Sendable {
    public typealias Output = ChildProcess.Output

    public var environment: [String: String]

    public init(environment: [String: String]) {
        self.environment = environment
    }

    /// The executable beside the test bundle (`swift build --build-tests` builds it), or
    /// `PAYWARDEN_BIN`.
    public static let executable: String = {
        if let path = ProcessInfo.processInfo.environment["PAYWARDEN_BIN"], !path.isEmpty { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("paywarden").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return bundle.appendingPathComponent("paywarden").path
    }()

    /// Runs `paywarden ARGUMENTS`, feeding `input` on stdin.
    @discardableResult
    public func run(_ arguments: [String], input: Data? = nil) throws -> Output {
        try ChildProcess.run(Self.executable, arguments, environment: environment, input: input)
    }
}
