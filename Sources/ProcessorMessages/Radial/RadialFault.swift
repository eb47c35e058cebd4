import Foundation

/// Radial's error reply, `Fault` (Checkout-Service-Fault-1.0.xsd, FaultResponseType): `CreateTimestamp`
/// (xs:dateTime with offset), `Code`, `Description`, then optional extensions. "Fault will be returned
/// when an exception occurs that prevents a transaction from being processed": invalid input, system
/// errors, unavailable services, validation failures, timeouts.
public struct RadialFault: Sendable, Hashable {
    /// Paywarden's fault codes (Radial documents the shape, not a code list).
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case validationFailed = "VALIDATION_FAILED"
        /// No valid credential, or one without the right to this operation.
        case unauthorized = "UNAUTHORIZED"
        case forbidden = "FORBIDDEN"
        case tokenNotAccepted = "TOKEN_NOT_ACCEPTED"
        case upstreamUnavailable = "SERVICE_UNAVAILABLE"
        case upstreamTimeout = "TIMEOUT"
        case systemError = "SYSTEM_ERROR"
    }

    public var code: String
    public var description: String
    public var timestamp: Date

    public init(code: Code, description: String, timestamp: Date) {
        self.code = code.rawValue
        self.description = description
        self.timestamp = timestamp
    }

    /// The fault for a refused request; the description is the error's rule, never a value.
    public init(refusing error: ProcessorMessageError, timestamp: Date) {
        self.init(code: .validationFailed, description: error.message, timestamp: timestamp)
    }

    public func document() -> ProcessorXML.Document {
        var root = RadialSchema.element("Fault")
        root.namespaceDeclarations = [.init(prefix: nil, namespaceURI: RadialSchema.namespaceURI)]
        root.appendChild(RadialSchema.element("CreateTimestamp", text: XSDateTime.withOffset(timestamp)))
        root.appendChild(RadialSchema.element("Code", text: code))
        root.appendChild(RadialSchema.element("Description", text: description))
        return ProcessorXML.Document(declaration: .init(), root: root)
    }
}
