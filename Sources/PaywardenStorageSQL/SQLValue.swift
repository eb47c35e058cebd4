import Foundation
import PaywardenPrimitives

/// A value bound to, or read from, a statement: the types both drivers' schemas use (times are
/// whole milliseconds since 1970, flags 0 or 1, lists JSON text).
public enum SQLValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    case null

    public init(_ date: Date) {
        self = .integer(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }

    public init(_ date: Date?) {
        self = date.map { SQLValue($0) } ?? .null
    }

    /// An organisation is stored as its plain string.
    public static func text(_ organization: OrganizationID) -> SQLValue { .text(organization.rawValue) }

    public init(_ organization: OrganizationID?) {
        self.init(organization?.rawValue)
    }

    public init(_ text: String?) {
        self = text.map { .text($0) } ?? .null
    }

    public init(_ bytes: [UInt8]?) {
        self = bytes.map { .blob($0) } ?? .null
    }

    public init(_ integer: Int) {
        self = .integer(Int64(integer))
    }

    public init(_ flag: Bool) {
        self = .integer(flag ? 1 : 0)
    }

    var typeName: String {
        switch self {
        case .integer: "an integer"
        case .text: "text"
        case .blob: "bytes"
        case .null: "NULL"
        }
    }
}
