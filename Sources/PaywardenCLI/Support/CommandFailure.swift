import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import Logging
import Synchronization
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

    init(_ error: CustodyError) {
        if let underlying = error.underlying, error.code == .hsm {
            self.init(underlying)
        } else {
            self.init(error.code == .storage ? .misconfiguration : .refused, error.message)
        }
    }

    /// Any error a command can meet, as a one-line failure.
    init(describing error: any Error) {
        switch error {
        case let failure as CommandFailure: self = failure
        case let error as PKCS11Error: self.init(error)
        case let error as CustodyError: self.init(error)
        case let error as PaymentTokenError: self.init(error)
        default: self.init(.refused, "\(error)")
        }
    }

    var exitCode: ExitCode { ExitCode(status.rawValue) }
}

extension AsyncParsableCommand {
    /// Runs `body`, turning every failure into one line on stderr and the matching exit status.
    func reportingFailures(_ body: () async throws -> Void) async throws {
        CommandLogging.bootstrap()
        do {
            try await body()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            let failure = CommandFailure(describing: error)
            FileHandle.standardError.write(Data("paywarden: \(failure.message)\n".utf8))
            throw failure.exitCode
        }
    }
}

/// Commands log to stderr, at `PAYWARDEN_LOG_LEVEL` (default `warning`), so stdout carries only
/// what the command prints.
enum CommandLogging {
    private static let bootstrapped = Mutex(false)

    /// Admin commands default to `warning`; the server to `info`.
    static func bootstrap(defaultLevel: Logger.Level = .warning) {
        bootstrapped.withLock { done in
            guard !done else { return }
            done = true
            let level = ProcessInfo.processInfo.environment["PAYWARDEN_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? defaultLevel
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
