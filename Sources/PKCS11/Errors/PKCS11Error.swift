import CPKCS11

/// An error from the PKCS#11 layer: a named code, the category that says what to do about it,
/// and a message for an operator. Messages never carry PINs or key material.
public struct PKCS11Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as precisely as the layer knows it.
    public enum Code: Sendable, Hashable {
        /// A PKCS#11 function returned this value.
        case returnValue(ReturnValue)
        case moduleNotFound
        case moduleInvalid
        case tokenNotFound
        case pinUnavailable
        case mechanismUnsupported
        case keyNotFound
        case invalidInput
        case unsupportedKey
        case poolStopped
        case overloaded
    }

    public let code: Code
    public let category: ErrorCategory
    /// The PKCS#11 function that failed, when there was one.
    public let function: String?
    public let message: String

    public init(code: Code, category: ErrorCategory, function: String? = nil, message: String) {
        self.code = code
        self.category = category
        self.function = function
        self.message = message
    }

    /// The return value, when the error came from a PKCS#11 call.
    public var returnValue: ReturnValue? {
        if case .returnValue(let value) = code { return value }
        return nil
    }

    public var description: String {
        var text = ""
        if let function { text += function + ": " }
        if let returnValue { text += returnValue.name + ": " }
        return text + message + " [" + category.rawValue + "]"
    }
}

extension PKCS11Error {
    /// The error for a failed call, with advice for the codes an operator is likely to meet.
    public static func call(_ function: String, _ value: ReturnValue, category: ErrorCategory? = nil) -> PKCS11Error {
        PKCS11Error(
            code: .returnValue(value),
            category: category ?? value.category,
            function: function,
            message: advice(for: value)
        )
    }

    static func advice(for value: ReturnValue) -> String {
        switch value {
        case .pinIncorrect:
            return "the user PIN was refused; check PAYWARDEN_PIN_FILE or PAYWARDEN_PIN (repeated failures may lock the token)"
        case .pinLocked:
            return "the user PIN is locked; the token's security officer must reset it"
        case .pinExpired, .pinInvalid, .pinLenRange:
            return "the user PIN is not acceptable to the token; set a valid PIN with the token's tools"
        case .userPinNotInitialized:
            return "the token has no user PIN; initialise it (paywarden dev-hsm init does this for SoftHSM)"
        case .mechanismInvalid, .mechanismParamInvalid, .functionNotSupported:
            return "the HSM does not support this mechanism or parameter; check the capability report at start-up"
        case .keyFunctionNotPermitted, .keyTypeInconsistent:
            return "the key's attributes do not allow this operation; it was created for another purpose"
        case .tokenNotPresent, .deviceRemoved:
            return "the token is gone; check the HSM connection, then the service re-logs in"
        case .userNotLoggedIn, .sessionClosed, .sessionHandleInvalid, .cryptokiNotInitialized:
            return "the session or login was lost; re-open the sessions and log in again"
        case .deviceError, .deviceMemory, .hostMemory, .functionFailed, .generalError:
            return "the HSM failed this call; retry, and check the HSM if it persists"
        case .sessionCount:
            return "the HSM has no free sessions; lower the worker count or close other clients"
        case .tokenWriteProtected:
            return "the token is read-only; key administration needs a writable token"
        case .dataInvalid, .dataLenRange, .encryptedDataInvalid, .encryptedDataLenRange,
             .wrappedKeyInvalid, .wrappedKeyLenRange, .publicKeyInvalid, .domainParamsInvalid:
            return "the HSM refused the input data as invalid"
        case .attributeValueInvalid, .templateInconsistent, .templateIncomplete:
            return "the HSM refused an object template; the key material or its attributes are invalid"
        default:
            return "the HSM returned an unexpected status"
        }
    }

    public static func invalidInput(_ message: String) -> PKCS11Error {
        PKCS11Error(code: .invalidInput, category: .badInput, message: message)
    }

    static func mechanismUnsupported(_ message: String) -> PKCS11Error {
        PKCS11Error(code: .mechanismUnsupported, category: .misconfiguration, message: message)
    }

    static func keyNotFound(_ id: KeyIdentifier) -> PKCS11Error {
        PKCS11Error(
            code: .keyNotFound, category: .misconfiguration,
            message: "no private key with CKA_ID \(id) is in the token; list the keys to see what the token holds"
        )
    }
}

/// Throws the named error unless `value` is `CKR_OK`.
@inline(__always)
func check(_ function: StaticString, _ value: CK_RV, generalErrorIs category: ErrorCategory? = nil) throws(PKCS11Error) {
    guard value != CK_RV(CKR_OK) else { return }
    let returnValue = ReturnValue(rawValue: value)
    let override = returnValue == .generalError ? category : nil
    throw PKCS11Error.call(String(describing: function), returnValue, category: override)
}
