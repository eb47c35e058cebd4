import ApplePay
import HTTPTypes
import OutboundTLS
import PaywardenServer
import PaywardenServices
import Testing
import Vault

/// The stable codes as one typed set: every module's code reaches it under its own name, the JSON
/// routes' codes are the ones openapi.json documents, and each protocol's mapping is a switch over
/// it (a new code does not compile until every protocol has decided what to answer).
struct StableCodeTests {
    @Test func everyModulesCodeKeepsItsNameAsAStableCode() {
        for code in PaymentTokenError.Code.allCases { #expect(StableCode(code).rawValue == code.rawValue, "\(code)") }
        for code in VaultError.Code.allCases { #expect(StableCode(code).rawValue == code.rawValue, "\(code)") }
        for code in AppleGatewayError.Code.allCases { #expect(StableCode(code).rawValue == code.rawValue, "\(code)") }
    }

    /// Each module's own category says what StableCode's does: a code cannot be "retry later" in the
    /// vault and a refusal at the HTTP layer.
    @Test func eachModulesCategoryAgreesWithTheStableCodes() {
        for code in PaymentTokenError.Code.allCases {
            let category = PaymentTokenError(code, "").category
            #expect(StableCode(code).category == (category == .unavailable ? .unavailable : .refused), "\(code)")
        }
        for code in VaultError.Code.allCases {
            let expected: StableCode.Category =
                switch VaultError(code, "").category {
                case .refused: .refused
                case .unavailable: .unavailable
                case .corrupt: .failure
                }
            #expect(StableCode(code).category == expected, "\(code)")
        }
    }

    /// openapi.json's `StableCode` is what the JSON routes answer; the rest are named only by a
    /// relay's reply (MercuryPay's `PaywardenErrorCode`, Radial's `Description`, cnpAPI's message)
    /// or by the merchant-token event commands.
    @Test func theJSONRoutesCodesAreTheDocumentedOnes() throws {
        let documented = try OpenAPIDocument.load().stableCodes
        let all = Set(StableCode.allCases.map(\.rawValue))
        #expect(documented.isSubset(of: all), "\(documented.subtracting(all))")
        #expect(
            all.subtracting(documented)
                == [
                    "token_not_recurring_eligible", "cryptogram_required", "event_not_found", "event_applied", "event_busy",
                    "submerchant_required", "submerchant_not_found",
                ],
            "\(all.subtracting(documented))")
    }

    /// What may pass is 503 with Retry-After; what the HSM or an internal failure would say in its
    /// own words reaches the caller as a fixed sentence, the words kept for the log.
    @Test func categoriesDecideRetryAndWhatTheCallerIsTold() {
        for code in StableCode.allCases {
            let error = APIError(code, message: "CKR_DEVICE_ERROR on key 0a1b in /var/lib/paywarden")
            #expect(error.status == code.httpStatus)
            #expect((error.headers[.retryAfter] != nil) == (code.category == .unavailable), "\(code)")
            if code.category == .unavailable { #expect(code.httpStatus == .serviceUnavailable, "\(code)") }
            if code == .hsmUnavailable || code == .internalError {
                #expect(!error.message.contains("CKR_") && error.detail?.contains("CKR_DEVICE_ERROR") == true, "\(code)")
            } else {
                #expect(error.message.contains("CKR_DEVICE_ERROR") && error.detail == nil, "\(code)")
            }
        }
    }
}
