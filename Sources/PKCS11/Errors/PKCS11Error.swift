import CPKCS11

/// An error from the PKCS#11 layer: a named code, the category that says what to do about it,
/// and a message in Cryptoki's terms. Messages never carry PINs or key material.
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
        /// The probe found no path for an operation payment tokens need: permanent until the HSM
        /// or the configuration changes.
        case capabilityMissing(CapabilityGap.Operation)
        case keyNotFound
        case invalidInput
        case unsupportedKey
        case poolStopped
        case overloaded
        /// The HSM did not answer within the operation deadline.
        case timedOut
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
    /// The error for a failed call. The message says what the return value means in Cryptoki
    /// terms; what an operator should do about it is the caller's to add (it knows the settings).
    public static func call(_ function: String, _ value: ReturnValue, category: ErrorCategory? = nil) -> PKCS11Error {
        PKCS11Error(
            code: .returnValue(value),
            category: category ?? value.category,
            function: function,
            message: meaning(of: value)
        )
    }

    static func meaning(of value: ReturnValue) -> String {
        switch value {
        case .pinIncorrect: "the token refused the user PIN"
        case .pinLocked: "the user PIN is locked"
        case .pinExpired, .pinInvalid, .pinLenRange: "the user PIN is not acceptable to the token"
        case .userPinNotInitialized: "the token has no user PIN"
        case .mechanismInvalid, .mechanismParamInvalid, .functionNotSupported: "the module does not support this mechanism or parameter"
        case .keyFunctionNotPermitted, .keyTypeInconsistent: "the key's attributes do not allow this operation"
        case .tokenNotPresent, .deviceRemoved: "the token is not present"
        case .userNotLoggedIn, .sessionClosed, .sessionHandleInvalid, .cryptokiNotInitialized: "the session or login was lost"
        case .deviceError, .deviceMemory, .hostMemory, .functionFailed, .generalError: "the module failed this call"
        case .sessionCount: "the token has no free sessions"
        case .tokenWriteProtected: "the token is write-protected"
        case .dataInvalid, .dataLenRange, .encryptedDataInvalid, .encryptedDataLenRange,
            .wrappedKeyInvalid, .wrappedKeyLenRange, .publicKeyInvalid, .domainParamsInvalid:
            "the module refused the input data as invalid"
        case .attributeValueInvalid, .templateInconsistent, .templateIncomplete: "the module refused an object template"
        default: "the module returned an unexpected status"
        }
    }

    public static func invalidInput(_ message: String) -> PKCS11Error {
        PKCS11Error(code: .invalidInput, category: .badInput, message: message)
    }

    public static func mechanismUnsupported(_ message: String) -> PKCS11Error {
        PKCS11Error(code: .mechanismUnsupported, category: .misconfiguration, message: message)
    }

    /// `gap` is nil only when a path exists, which callers have just checked is not so.
    static func capabilityMissing(_ gap: CapabilityGap?) -> PKCS11Error {
        guard let gap else { return mechanismUnsupported("the capability probe found no path") }
        return PKCS11Error(code: .capabilityMissing(gap.operation), category: .misconfiguration, message: gap.description)
    }

    static func overloaded(_ maxPending: Int) -> PKCS11Error {
        PKCS11Error(code: .overloaded, category: .retry, message: "\(maxPending) HSM operations are already waiting; retry shortly")
    }

    static func timedOut(after deadline: Duration) -> PKCS11Error {
        PKCS11Error(
            code: .timedOut, category: .retry,
            message: "the HSM did not answer within \(deadline); the operation was given up (it may still finish in the module)")
    }

    static func keyNotFound(_ id: KeyIdentifier) -> PKCS11Error {
        PKCS11Error(
            code: .keyNotFound, category: .misconfiguration,
            message: "no key with CKA_ID \(id) is in the token"
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
