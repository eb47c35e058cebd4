import OutboundTLS
import PaywardenServices
import PaywardenStorage
import Vault

/// Why a merchant-token request (a notification, an unlink, a URL update, a payment session)
/// failed: a stable code (the server answers it with its HTTP status) and a message without
/// secrets.
public struct MerchantTokenFailure: Error, Sendable, CustomStringConvertible {
    public let code: StableCode
    public let message: String

    /// Whether trying again later may succeed (Apple, the HSM or the database unreachable).
    public var isTemporary: Bool { code.category == .unavailable }

    public init(_ code: StableCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Apple's gateway or the call to it: the caller's mistakes are 4xx, Apple's refusals 502,
    /// what may pass (Apple or the HSM unreachable) 503 with Retry-After.
    public init(_ error: AppleGatewayError) {
        self.init(StableCode(error.code), error.message)
    }

    public init(_ error: VaultError) {
        self.init(StableCode(error.code), error.message)
    }

    public init(_ error: StorageError) {
        // The driver's own words stay in the log; a client learns only that it may try again.
        self.init(.databaseUnavailable, "the database cannot be used now; try again shortly")
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
