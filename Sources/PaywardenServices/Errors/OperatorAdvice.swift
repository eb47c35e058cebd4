import KeyCustody
import PKCS11
import PaywardenConfiguration

/// What an operator should do about an HSM failure, naming Paywarden's settings and commands. The
/// PKCS#11 layer says what went wrong in Cryptoki's terms; this adds the advice.
public enum OperatorAdvice {
    /// The error's message followed by the advice for it, when there is any.
    public static func describe(_ error: PKCS11Error) -> String {
        guard let advice = advice(for: error) else { return error.description }
        return "\(error.description); \(advice)"
    }

    public static func advice(for error: PKCS11Error) -> String? {
        typealias C = SettingCatalog
        switch error.code {
        case .moduleNotFound:
            return "install the HSM's client library (softhsm2 for development) or set \(C.pkcs11Module.environmentName)"
        case .moduleInvalid:
            return "point \(C.pkcs11Module.environmentName) at the vendor's PKCS#11 library"
        case .tokenNotFound:
            return "set \(C.tokenLabel.environmentName), or run `paywarden dev-hsm init` for a development token"
        case .pinUnavailable:
            return "set \(C.pinFile.environmentName) to a readable file holding the PIN (or \(C.pin.environmentName))"
        case .mechanismUnsupported, .capabilityMissing:
            return "run `paywarden hsm status` for the capability report"
        case .keyNotFound:
            return "run `paywarden keys list` to see the keys the token holds"
        case .timedOut:
            return "check the HSM and the network to it; \(C.hsmOperationTimeoutMilliseconds.environmentName) sets the deadline"
        default:
            break
        }
        switch error.returnValue {
        case .pinIncorrect?:
            return
                "check \(C.pinFile.environmentName) or \(C.pin.environmentName); Paywarden does not retry a refused PIN, since repeated "
                + "failures may lock the token"
        case .pinLocked?:
            return "the token's security officer must reset the user PIN"
        case .pinExpired?, .pinInvalid?, .pinLenRange?:
            return "set a valid PIN with the token's tools"
        case .userPinNotInitialized?:
            return "initialise the user PIN (`paywarden dev-hsm init` does this for SoftHSM)"
        case .tokenNotPresent?, .deviceRemoved?:
            return "check the HSM connection; the service re-establishes the session when it is back"
        case .sessionCount?:
            return "lower \(C.hsmWorkers.environmentName) or close the HSM's other clients"
        case .tokenWriteProtected?:
            return "key administration needs a writable token"
        case .keyFunctionNotPermitted?, .keyTypeInconsistent?:
            return "the key was created for another purpose"
        default:
            return error.category == .retry ? "retry, and check the HSM if it persists" : nil
        }
    }

    /// A custody failure with the advice for the HSM error behind it.
    public static func describe(_ error: CustodyError) -> String {
        guard let underlying = error.underlying, error.code == .hsm else { return error.message }
        return describe(underlying)
    }
}
