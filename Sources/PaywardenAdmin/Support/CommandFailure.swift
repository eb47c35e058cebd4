import ApplePay
import ArgumentParser
import Foundation
import KeyCustody
import Logging
import PKCS11
import PaywardenConfiguration
import PaywardenPrimitives
import PaywardenSandbox
import PaywardenServices
import PaywardenStorage
import Synchronization
import Vault

/// A failure reported as one line on stderr with a stable exit status: what was wrong and what
/// to do about it.
public struct CommandFailure: Error, CustomStringConvertible {
    public enum Status: Int32, Sendable {
        case refused = 1
        case misconfiguration = 3
        case unavailable = 4
    }

    public let status: Status
    public let message: String

    public var description: String { message }

    public init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: PKCS11Error) {
        switch error.category {
        case .misconfiguration: status = .misconfiguration
        case .retry, .relogin: status = .unavailable
        case .badInput: status = .refused
        }
        message = OperatorAdvice.describe(error)
    }

    init(_ error: CustodyError) {
        if let underlying = error.underlying, error.code == .hsm {
            self.init(underlying)
        } else {
            let status: Status =
                switch error.code {
                case .storage: .misconfiguration
                case .databaseUnavailable: .unavailable
                default: .refused
                }
            self.init(status, error.message)
        }
    }

    init(_ error: PaymentTokenError) {
        let status: Status =
            switch error.code {
            case .hsmUnavailable, .overloaded, .databaseUnavailable: .unavailable
            case .hsmCapabilityMissing: .misconfiguration
            default: .refused
            }
        self.init(status, error.description)
    }

    init(_ error: StorageError) {
        let status: Status =
            switch error.category {
            case .unavailable: .unavailable
            case .conflict: .refused
            case .corrupt, .schema: .misconfiguration
            }
        self.init(status, "the database: \(error)")
    }

    /// The vault's messages say what to do. A database outage exits as a `StorageError`'s does, and
    /// an unreadable record as the corrupt storage it mostly reports.
    init(_ error: VaultError) {
        let status: Status =
            switch error.code {
            case .hsmUnavailable, .databaseUnavailable: .unavailable
            // Another HSM or client library is the answer, as for a token version it cannot decrypt.
            case .recordUnreadable, .hsmCapabilityMissing: .misconfiguration
            default: .refused
            }
        self.init(status, error.message)
    }

    /// Any error a command can meet, as a one-line failure.
    public init(describing error: any Error) {
        switch error {
        case let failure as CommandFailure: self = failure
        case let error as PKCS11Error: self.init(error)
        case let error as CustodyError: self.init(error)
        case let error as PaymentTokenError: self.init(error)
        case let error as ConfigurationError: self.init(.misconfiguration, error.message)
        case let error as ServerStartError: self.init(.misconfiguration, error.description)
        case let error as StorageError: self.init(error)
        case let error as VaultError: self.init(error)
        case let error as DevelopmentPKIError: self.init(.misconfiguration, error.description)
        case let error as LoopbackPort.Unavailable: self.init(.unavailable, error.description)
        default: self.init(.refused, "\(error)")
        }
    }

    public var exitCode: ExitCode { ExitCode(status.rawValue) }

    /// Prints the one line on stderr.
    public func report() {
        FileHandle.standardError.write(Data("paywarden: \(message)\n".utf8))
    }
}

extension AsyncParsableCommand {
    /// Loads the settings (environment, then `PAYWARDEN_CONFIG`), starts logging, and runs `body`,
    /// turning every failure into one line on stderr and the matching exit status.
    func reportingFailures(defaultLogLevel: Logger.Level = .warning, _ body: (PaywardenSettings) async throws -> Void) async throws {
        try await reportingFailures {
            let settings = try await PaywardenSettings.load()
            CommandLogging.bootstrap(settings, defaultLevel: defaultLogLevel)
            try await body(settings)
        }
    }

    /// `body`'s failures as one line on stderr and the matching exit status, for a command that
    /// loads its settings itself (``DatabasePair`` sets the database password aside for the target).
    func reportingFailures(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            let failure = CommandFailure(describing: error)
            failure.report()
            throw failure.exitCode
        }
    }
}

/// Commands log to stderr, so stdout carries only what the command prints.
public enum CommandLogging {
    private static let bootstrapped = Mutex(false)

    /// Logging as the settings say: `PAYWARDEN_LOG_LEVEL` (else `defaultLevel`) and
    /// `PAYWARDEN_LOG_FORMAT`, on standard error; `metadataProvider` adds to every line (the active
    /// span's ids when tracing). Only the first call of a process counts.
    public static func bootstrap(
        _ settings: PaywardenSettings, defaultLevel: Logger.Level, metadataProvider: Logger.MetadataProvider? = nil
    ) {
        let level = settings.logLevel.flatMap(Logger.Level.init(rawValue:)) ?? defaultLevel
        let format = LogFormat(rawValue: settings.logFormat) ?? .text
        bootstrapped.withLock { done in
            guard !done else { return }
            done = true
            LoggingSystem.bootstrap { label in
                var handler = format.handler(label: label, stream: StandardErrorStream(), metadataProvider: metadataProvider)
                handler.logLevel = level
                return handler
            }
        }
    }
}
