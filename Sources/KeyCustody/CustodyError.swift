import PKCS11

/// Why a key-custody action was refused or failed. Messages say what was wrong and what to do,
/// and never carry key material or PINs.
public struct CustodyError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case certificateUnreadable = "certificate_unreadable"
        /// Not issued by the accepted certification authorities, or not for the merchant the key is for.
        case certificateUntrusted = "certificate_untrusted"
        case certificateKeyMismatch = "no_matching_key"
        case purposeMismatch = "purpose_mismatch"
        case certificateExpired = "certificate_expired"
        case certificateNotYetValid = "certificate_not_yet_valid"
        case merchantMismatch = "merchant_mismatch"
        case keyNotFound = "key_not_found"
        case ambiguousKey = "ambiguous_key"
        case invalidState = "invalid_state"
        case invalidArgument = "invalid_argument"
        case keyUnreadable = "key_unreadable"
        case storage = "storage"
        /// The database holding the key records did not answer: retry once it does.
        case databaseUnavailable = "database_unavailable"
        case hsm = "hsm"
    }

    public let code: Code
    public let message: String
    /// The HSM error behind an `hsm` failure.
    public let underlying: PKCS11Error?

    public init(_ code: Code, _ message: String, underlying: PKCS11Error? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public init(_ error: PKCS11Error) {
        self.init(error.category == .badInput ? .invalidArgument : .hsm, error.description, underlying: error)
    }

    public var description: String { message }
}
