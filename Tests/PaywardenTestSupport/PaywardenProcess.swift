import Foundation

/// Runs the built `paywarden` executable as an operator would, with its own environment.
public struct PaywardenProcess: Sendable {
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = arguments
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        let inPipe = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inPipe
        try process.run()
        if let input { inPipe.fileHandleForWriting.write(input) }
        try inPipe.fileHandleForWriting.close()
        // Read both pipes to the end before waiting, so a chatty child never blocks on a full pipe.
        let errData = Mutex<Data>()
        let errReader = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        errReader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errData.isSet { usleep(1000) }
        return Output(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData.value, as: UTF8.self))
    }

    /// A tiny one-shot box for the stderr reader's result.
    private final class Mutex<Value: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Value?
        func set(_ value: Value) { lock.withLock { stored = value } }
        var isSet: Bool { lock.withLock { stored != nil } }
        var value: Value { lock.withLock { stored! } }
    }
}
