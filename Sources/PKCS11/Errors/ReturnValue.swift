import CPKCS11

/// A PKCS#11 return value (`CK_RV`), named as the standard names it.
///
/// Every value maps to an ``ErrorCategory`` so callers can decide between refusing the input,
/// retrying, re-establishing the login, or telling an operator the configuration is wrong.
public struct ReturnValue: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt

    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    /// The standard's name, e.g. `CKR_PIN_INCORRECT`, or the hex value for vendor codes.
    public var name: String {
        if let name = Self.names[rawValue] { return name }
        if rawValue >= 0x8000_0000 { return "CKR_VENDOR_DEFINED+0x" + String(rawValue - 0x8000_0000, radix: 16) }
        return "0x" + String(rawValue, radix: 16)
    }

    public var description: String { name }

    public static let ok = ReturnValue(rawValue: 0)
    public static let cancel = ReturnValue(rawValue: 1)
    public static let hostMemory = ReturnValue(rawValue: 2)
    public static let slotIdInvalid = ReturnValue(rawValue: 3)
    public static let generalError = ReturnValue(rawValue: 5)
    public static let functionFailed = ReturnValue(rawValue: 6)
    public static let argumentsBad = ReturnValue(rawValue: 7)
    public static let noEvent = ReturnValue(rawValue: 8)
    public static let needToCreateThreads = ReturnValue(rawValue: 9)
    public static let cantLock = ReturnValue(rawValue: 0xa)
    public static let attributeReadOnly = ReturnValue(rawValue: 0x10)
    public static let attributeSensitive = ReturnValue(rawValue: 0x11)
    public static let attributeTypeInvalid = ReturnValue(rawValue: 0x12)
    public static let attributeValueInvalid = ReturnValue(rawValue: 0x13)
    public static let actionProhibited = ReturnValue(rawValue: 0x1B)
    public static let dataInvalid = ReturnValue(rawValue: 0x20)
    public static let dataLenRange = ReturnValue(rawValue: 0x21)
    public static let deviceError = ReturnValue(rawValue: 0x30)
    public static let deviceMemory = ReturnValue(rawValue: 0x31)
    public static let deviceRemoved = ReturnValue(rawValue: 0x32)
    public static let encryptedDataInvalid = ReturnValue(rawValue: 0x40)
    public static let encryptedDataLenRange = ReturnValue(rawValue: 0x41)
    public static let functionCanceled = ReturnValue(rawValue: 0x50)
    public static let functionNotParallel = ReturnValue(rawValue: 0x51)
    public static let functionNotSupported = ReturnValue(rawValue: 0x54)
    public static let keyHandleInvalid = ReturnValue(rawValue: 0x60)
    public static let keySizeRange = ReturnValue(rawValue: 0x62)
    public static let keyTypeInconsistent = ReturnValue(rawValue: 0x63)
    public static let keyNotNeeded = ReturnValue(rawValue: 0x64)
    public static let keyChanged = ReturnValue(rawValue: 0x65)
    public static let keyNeeded = ReturnValue(rawValue: 0x66)
    public static let keyIndigestible = ReturnValue(rawValue: 0x67)
    public static let keyFunctionNotPermitted = ReturnValue(rawValue: 0x68)
    public static let keyNotWrappable = ReturnValue(rawValue: 0x69)
    public static let keyUnextractable = ReturnValue(rawValue: 0x6a)
    public static let mechanismInvalid = ReturnValue(rawValue: 0x70)
    public static let mechanismParamInvalid = ReturnValue(rawValue: 0x71)
    public static let objectHandleInvalid = ReturnValue(rawValue: 0x82)
    public static let operationActive = ReturnValue(rawValue: 0x90)
    public static let operationNotInitialized = ReturnValue(rawValue: 0x91)
    public static let pinIncorrect = ReturnValue(rawValue: 0xa0)
    public static let pinInvalid = ReturnValue(rawValue: 0xa1)
    public static let pinLenRange = ReturnValue(rawValue: 0xa2)
    public static let pinExpired = ReturnValue(rawValue: 0xa3)
    public static let pinLocked = ReturnValue(rawValue: 0xa4)
    public static let sessionClosed = ReturnValue(rawValue: 0xb0)
    public static let sessionCount = ReturnValue(rawValue: 0xb1)
    public static let sessionHandleInvalid = ReturnValue(rawValue: 0xb3)
    public static let sessionParallelNotSupported = ReturnValue(rawValue: 0xb4)
    public static let sessionReadOnly = ReturnValue(rawValue: 0xb5)
    public static let sessionExists = ReturnValue(rawValue: 0xb6)
    public static let sessionReadOnlyExists = ReturnValue(rawValue: 0xb7)
    public static let sessionReadWriteSoExists = ReturnValue(rawValue: 0xb8)
    public static let signatureInvalid = ReturnValue(rawValue: 0xc0)
    public static let signatureLenRange = ReturnValue(rawValue: 0xc1)
    public static let templateIncomplete = ReturnValue(rawValue: 0xd0)
    public static let templateInconsistent = ReturnValue(rawValue: 0xd1)
    public static let tokenNotPresent = ReturnValue(rawValue: 0xe0)
    public static let tokenNotRecognized = ReturnValue(rawValue: 0xe1)
    public static let tokenWriteProtected = ReturnValue(rawValue: 0xe2)
    public static let unwrappingKeySizeRange = ReturnValue(rawValue: 0xf1)
    public static let unwrappingKeyTypeInconsistent = ReturnValue(rawValue: 0xf2)
    public static let userAlreadyLoggedIn = ReturnValue(rawValue: 0x100)
    public static let userNotLoggedIn = ReturnValue(rawValue: 0x101)
    public static let userPinNotInitialized = ReturnValue(rawValue: 0x102)
    public static let userTypeInvalid = ReturnValue(rawValue: 0x103)
    public static let userAnotherAlreadyLoggedIn = ReturnValue(rawValue: 0x104)
    public static let userTooManyTypes = ReturnValue(rawValue: 0x105)
    public static let wrappedKeyInvalid = ReturnValue(rawValue: 0x110)
    public static let wrappedKeyLenRange = ReturnValue(rawValue: 0x112)
    public static let wrappingKeyHandleInvalid = ReturnValue(rawValue: 0x113)
    public static let wrappingKeySizeRange = ReturnValue(rawValue: 0x114)
    public static let wrappingKeyTypeInconsistent = ReturnValue(rawValue: 0x115)
    public static let randomSeedNotSupported = ReturnValue(rawValue: 0x120)
    public static let randomNoRng = ReturnValue(rawValue: 0x121)
    public static let domainParamsInvalid = ReturnValue(rawValue: 0x130)
    public static let curveNotSupported = ReturnValue(rawValue: 0x140)
    public static let bufferTooSmall = ReturnValue(rawValue: 0x150)
    public static let savedStateInvalid = ReturnValue(rawValue: 0x160)
    public static let informationSensitive = ReturnValue(rawValue: 0x170)
    public static let stateUnsaveable = ReturnValue(rawValue: 0x180)
    public static let cryptokiNotInitialized = ReturnValue(rawValue: 0x190)
    public static let cryptokiAlreadyInitialized = ReturnValue(rawValue: 0x191)
    public static let mutexBad = ReturnValue(rawValue: 0x1a0)
    public static let mutexNotLocked = ReturnValue(rawValue: 0x1a1)
    public static let newPinMode = ReturnValue(rawValue: 0x1b0)
    public static let nextOtp = ReturnValue(rawValue: 0x1b1)
    public static let exceededMaxIterations = ReturnValue(rawValue: 0x1c0)
    public static let fipsSelfTestFailed = ReturnValue(rawValue: 0x1c1)
    public static let libraryLoadFailed = ReturnValue(rawValue: 0x1c2)
    public static let pinTooWeak = ReturnValue(rawValue: 0x1c3)
    public static let publicKeyInvalid = ReturnValue(rawValue: 0x1c4)
    public static let functionRejected = ReturnValue(rawValue: 0x200)

    /// How a caller should treat this value when it comes back from a call made with valid input.
    /// `CKR_GENERAL_ERROR` is ``ErrorCategory/retry`` here; on operations that consume untrusted
    /// data (derive with a peer point, decrypt) the session layer reclassifies it as bad input,
    /// because that is what SoftHSM returns for an off-curve point or a bad GCM tag.
    public var category: ErrorCategory {
        switch self {
        case .attributeValueInvalid, .curveNotSupported, .dataInvalid, .dataLenRange, .domainParamsInvalid, .encryptedDataInvalid,
            .encryptedDataLenRange, .keyIndigestible, .keySizeRange, .publicKeyInvalid, .signatureInvalid, .signatureLenRange,
            .unwrappingKeySizeRange, .wrappedKeyInvalid, .wrappedKeyLenRange, .wrappingKeySizeRange:
            return .badInput
        case .bufferTooSmall, .cancel, .cantLock, .deviceError, .deviceMemory, .exceededMaxIterations, .functionCanceled, .functionFailed,
            .functionNotParallel, .generalError, .hostMemory, .keyChanged, .keyHandleInvalid, .keyNeeded, .keyNotNeeded, .mutexBad,
            .mutexNotLocked, .nextOtp, .noEvent, .objectHandleInvalid, .operationActive, .operationNotInitialized, .randomNoRng,
            .savedStateInvalid, .sessionCount, .stateUnsaveable, .wrappingKeyHandleInvalid:
            return .retry
        case .cryptokiNotInitialized, .deviceRemoved, .sessionClosed, .sessionHandleInvalid, .tokenNotPresent, .userNotLoggedIn:
            return .relogin
        default:
            return .misconfiguration
        }
    }

    private static let names: [UInt: String] = [
        0: "CKR_OK",
        1: "CKR_CANCEL",
        2: "CKR_HOST_MEMORY",
        3: "CKR_SLOT_ID_INVALID",
        5: "CKR_GENERAL_ERROR",
        6: "CKR_FUNCTION_FAILED",
        7: "CKR_ARGUMENTS_BAD",
        8: "CKR_NO_EVENT",
        9: "CKR_NEED_TO_CREATE_THREADS",
        0xa: "CKR_CANT_LOCK",
        0x10: "CKR_ATTRIBUTE_READ_ONLY",
        0x11: "CKR_ATTRIBUTE_SENSITIVE",
        0x12: "CKR_ATTRIBUTE_TYPE_INVALID",
        0x13: "CKR_ATTRIBUTE_VALUE_INVALID",
        0x1B: "CKR_ACTION_PROHIBITED",
        0x20: "CKR_DATA_INVALID",
        0x21: "CKR_DATA_LEN_RANGE",
        0x30: "CKR_DEVICE_ERROR",
        0x31: "CKR_DEVICE_MEMORY",
        0x32: "CKR_DEVICE_REMOVED",
        0x40: "CKR_ENCRYPTED_DATA_INVALID",
        0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE",
        0x50: "CKR_FUNCTION_CANCELED",
        0x51: "CKR_FUNCTION_NOT_PARALLEL",
        0x54: "CKR_FUNCTION_NOT_SUPPORTED",
        0x60: "CKR_KEY_HANDLE_INVALID",
        0x62: "CKR_KEY_SIZE_RANGE",
        0x63: "CKR_KEY_TYPE_INCONSISTENT",
        0x64: "CKR_KEY_NOT_NEEDED",
        0x65: "CKR_KEY_CHANGED",
        0x66: "CKR_KEY_NEEDED",
        0x67: "CKR_KEY_INDIGESTIBLE",
        0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED",
        0x69: "CKR_KEY_NOT_WRAPPABLE",
        0x6a: "CKR_KEY_UNEXTRACTABLE",
        0x70: "CKR_MECHANISM_INVALID",
        0x71: "CKR_MECHANISM_PARAM_INVALID",
        0x82: "CKR_OBJECT_HANDLE_INVALID",
        0x90: "CKR_OPERATION_ACTIVE",
        0x91: "CKR_OPERATION_NOT_INITIALIZED",
        0xa0: "CKR_PIN_INCORRECT",
        0xa1: "CKR_PIN_INVALID",
        0xa2: "CKR_PIN_LEN_RANGE",
        0xa3: "CKR_PIN_EXPIRED",
        0xa4: "CKR_PIN_LOCKED",
        0xb0: "CKR_SESSION_CLOSED",
        0xb1: "CKR_SESSION_COUNT",
        0xb3: "CKR_SESSION_HANDLE_INVALID",
        0xb4: "CKR_SESSION_PARALLEL_NOT_SUPPORTED",
        0xb5: "CKR_SESSION_READ_ONLY",
        0xb6: "CKR_SESSION_EXISTS",
        0xb7: "CKR_SESSION_READ_ONLY_EXISTS",
        0xb8: "CKR_SESSION_READ_WRITE_SO_EXISTS",
        0xc0: "CKR_SIGNATURE_INVALID",
        0xc1: "CKR_SIGNATURE_LEN_RANGE",
        0xd0: "CKR_TEMPLATE_INCOMPLETE",
        0xd1: "CKR_TEMPLATE_INCONSISTENT",
        0xe0: "CKR_TOKEN_NOT_PRESENT",
        0xe1: "CKR_TOKEN_NOT_RECOGNIZED",
        0xe2: "CKR_TOKEN_WRITE_PROTECTED",
        0xf1: "CKR_UNWRAPPING_KEY_SIZE_RANGE",
        0xf2: "CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT",
        0x100: "CKR_USER_ALREADY_LOGGED_IN",
        0x101: "CKR_USER_NOT_LOGGED_IN",
        0x102: "CKR_USER_PIN_NOT_INITIALIZED",
        0x103: "CKR_USER_TYPE_INVALID",
        0x104: "CKR_USER_ANOTHER_ALREADY_LOGGED_IN",
        0x105: "CKR_USER_TOO_MANY_TYPES",
        0x110: "CKR_WRAPPED_KEY_INVALID",
        0x112: "CKR_WRAPPED_KEY_LEN_RANGE",
        0x113: "CKR_WRAPPING_KEY_HANDLE_INVALID",
        0x114: "CKR_WRAPPING_KEY_SIZE_RANGE",
        0x115: "CKR_WRAPPING_KEY_TYPE_INCONSISTENT",
        0x120: "CKR_RANDOM_SEED_NOT_SUPPORTED",
        0x121: "CKR_RANDOM_NO_RNG",
        0x130: "CKR_DOMAIN_PARAMS_INVALID",
        0x140: "CKR_CURVE_NOT_SUPPORTED",
        0x150: "CKR_BUFFER_TOO_SMALL",
        0x160: "CKR_SAVED_STATE_INVALID",
        0x170: "CKR_INFORMATION_SENSITIVE",
        0x180: "CKR_STATE_UNSAVEABLE",
        0x190: "CKR_CRYPTOKI_NOT_INITIALIZED",
        0x191: "CKR_CRYPTOKI_ALREADY_INITIALIZED",
        0x1a0: "CKR_MUTEX_BAD",
        0x1a1: "CKR_MUTEX_NOT_LOCKED",
        0x1b0: "CKR_NEW_PIN_MODE",
        0x1b1: "CKR_NEXT_OTP",
        0x1c0: "CKR_EXCEEDED_MAX_ITERATIONS",
        0x1c1: "CKR_FIPS_SELF_TEST_FAILED",
        0x1c2: "CKR_LIBRARY_LOAD_FAILED",
        0x1c3: "CKR_PIN_TOO_WEAK",
        0x1c4: "CKR_PUBLIC_KEY_INVALID",
        0x200: "CKR_FUNCTION_REJECTED",
    ]
}
