/// An organisation: the tenant that owns API keys, high-value tokens, paypages, registrations and
/// web merchants, and the boundary no read crosses. A type of its own so that a merchant
/// identifier, a token or a paypage ID cannot be passed where an organisation is meant; stored and
/// encoded as its plain string.
public struct OrganizationID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static func < (lhs: OrganizationID, rhs: OrganizationID) -> Bool { lhs.rawValue < rhs.rawValue }
}
