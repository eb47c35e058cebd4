/// The `response`/`message` attributes of `cnpOnlineResponse` (Worldpay cnpAPI reference,
/// "cnpOnlineResponse": 0 valid; 1 XML validation failed, message says why; 2 not well-formed XML
/// or not XML, "System Error - Call Vantiv."; 3 empty or invalid credentials, 4 too many concurrent
/// connections, 5 content violating restrictions, all three with "There is a problem with the
/// system. Contact eCommerceSupport@vantiv.com."). The SDKs check `response="1"` and expect the
/// message to start "Error validating xml data against the schema".
public struct CnpEnvelopeStatus: Sendable, Hashable {
    public let response: String
    public let message: String

    public static let validFormat = CnpEnvelopeStatus(response: "0", message: "Valid Format")
    public static let notXML = CnpEnvelopeStatus(response: "2", message: "System Error - Call Vantiv.")
    public static let invalidCredentials = CnpEnvelopeStatus(response: "3", message: systemProblem)
    public static let tooManyConnections = CnpEnvelopeStatus(response: "4", message: systemProblem)
    public static let restrictedContent = CnpEnvelopeStatus(response: "5", message: systemProblem)

    private static let systemProblem = "There is a problem with the system. Contact eCommerceSupport@vantiv.com."

    /// Response 1 with the validation failure appended (512 characters at most: messageType).
    public static func schemaValidationFailed(_ detail: String) -> CnpEnvelopeStatus {
        let message = "Error validating xml data against the schema: \(detail)"
        return CnpEnvelopeStatus(response: "1", message: String(message.prefix(512)))
    }

    /// The status for a refused request: limits, DTDs, entities and processing instructions are
    /// restricted content (5); other XML errors are "not XML" (2); everything else failed validation (1).
    public static func forRefusal(_ error: ProcessorMessageError) -> CnpEnvelopeStatus {
        guard let xmlError = error.xmlError else { return .schemaValidationFailed(error.message) }
        switch xmlError.code {
        case .inputTooLarge, .depthLimitExceeded, .elementLimitExceeded, .attributeLimitExceeded, .textLimitExceeded,
            .doctypeForbidden, .entityForbidden, .processingInstructionForbidden:
            return .restrictedContent
        default:
            return .notXML
        }
    }
}
