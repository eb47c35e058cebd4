import ArgumentParser
import Foundation
import Logging
import PKCS11

/// A failure reported as one line on stderr with a stable exit status.
struct CommandFailure: Error, CustomStringConvertible {
    enum Status: Int32 {
        case refused = 1
        case misconfiguration = 3
        case unavailable = 4
    }

    let status: Status
    let message: String

    var description: String { message }

    init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: PKCS11Error) {
        switch error.category {
        case .misconfiguration: status = .misconfiguration
        case .retry, .relogin: status = .unavailable
        case .badInput: status = .refused
        }
        message = error.description
    }
}

extension AsyncParsableCommand {
    /// Runs `body`, turning every failure into one line on stderr and the matching exit status.
    func reportingFailures(_ body: () async throws -> Void) async throws {
        CommandLogging.bootstrap()
        do {
            try await body()
        } catch let failure as CommandFailure {
            FileHandle.standardError.write(Data("paywarden: \(failure.message)\n".utf8))
            throw ExitCode(failure.status.rawValue)
        } catch let error as PKCS11Error {
            let failure = CommandFailure(error)
            FileHandle.standardError.write(Data("paywarden: \(failure.message)\n".utf8))
            throw ExitCode(failure.status.rawValue)
        }
    }
}

/// Commands log to stderr, at `PAYWARDEN_LOG_LEVEL` (default `warning`), so stdout carries only
/// what the command prints.
enum CommandLogging {
    private static let once: Void = {
        let level = ProcessInfo.processInfo.environment["PAYWARDEN_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }()

    static func bootstrap() {
        _ = once
    }
}
