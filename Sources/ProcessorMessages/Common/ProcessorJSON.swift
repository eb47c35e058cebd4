import PaywardenPrimitives

/// A JSON value that keeps object members in order and numbers as written, so a request can be
/// validated, edited and forwarded with every field it had, unknown ones included.
public enum ProcessorJSON: Sendable, Hashable {
    case object([Member])
    case array([ProcessorJSON])
    case string(String)
    /// The number's text exactly as received (no binary floating-point round trip for amounts).
    case number(String)
    case bool(Bool)
    case null

    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: ProcessorJSON

        public init(_ key: String, _ value: ProcessorJSON) {
            self.key = key
            self.value = value
        }
    }

    /// Caps enforced while parsing. Defaults match ``ProcessorXML/Limits``.
    public struct Limits: Sendable, Hashable {
        public var maximumBytes: Int
        public var maximumDepth: Int
        /// Most values (members and elements, recursively) in one document.
        public var maximumValues: Int
        public var maximumStringBytes: Int

        public init(maximumBytes: Int = 64 * 1024, maximumDepth: Int = 32, maximumValues: Int = 2_000, maximumStringBytes: Int = 16 * 1024)
        {
            self.maximumBytes = maximumBytes
            self.maximumDepth = maximumDepth
            self.maximumValues = maximumValues
            self.maximumStringBytes = maximumStringBytes
        }

        public static let `default` = Limits()
    }

    /// The members of an object; nil for any other value.
    public var members: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The value of a member of an object.
    public subscript(key: String) -> ProcessorJSON? {
        members?.first { $0.key == key }?.value
    }

    /// A string value's content.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// Sets a member of an object (replacing it in place, or appending); no effect on other values.
    public mutating func setMember(_ key: String, _ value: ProcessorJSON) {
        guard case .object(var members) = self else { return }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append(Member(key, value))
        }
        self = .object(members)
    }

    /// Removes a member of an object; returns whether it was there.
    @discardableResult
    public mutating func removeMember(_ key: String) -> Bool {
        guard case .object(var members) = self else { return false }
        let before = members.count
        members.removeAll { $0.key == key }
        self = .object(members)
        return members.count != before
    }

    /// Reads one JSON value by ``StrictJSON``'s rules with these limits: a byte order mark passed
    /// over, and two names `String` sees as one (canonically equivalent) refused as a repeat, since
    /// members are looked up by `String`.
    public static func parse(
        _ bytes: [UInt8],
        format: ProcessorMessageError.Format,
        limits: Limits = .default
    ) throws(ProcessorMessageError) -> ProcessorJSON {
        guard bytes.count <= limits.maximumBytes else {
            throw ProcessorMessageError(
                format, .malformedJSON, field: nil, "the body is \(bytes.count) bytes; the limit is \(limits.maximumBytes) (at byte 0)")
        }
        let rules = StrictJSON.Rules(
            maximumDepth: limits.maximumDepth, maximumValues: limits.maximumValues, maximumStringBytes: limits.maximumStringBytes,
            maximumNumberLength: 64, byteOrderMark: .skipped, repeatedNames: .canonicallyEquivalent)
        do {
            return ProcessorJSON(try StrictJSON.value(bytes, rules: rules))
        } catch {
            throw ProcessorMessageError(error, format: format)
        }
    }

    init(_ value: StrictJSON.Value) {
        switch value {
        case .object(let object):
            self = .object(object.members.map { Member(String(decoding: $0.name, as: UTF8.self), ProcessorJSON($0.value)) })
        case .array(let elements): self = .array(elements.map(ProcessorJSON.init))
        case .string(let bytes): self = .string(String(decoding: bytes, as: UTF8.self))
        case .number(let text): self = .number(String(decoding: text, as: UTF8.self))
        case .bool(let value): self = .bool(value)
        case .null: self = .null
        }
    }

    /// Compact UTF-8 JSON, members in order.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        write(into: &output)
        return output
    }

    private func write(into output: inout [UInt8]) {
        switch self {
        case .object(let members): CompactJSON.appendObject(members, to: &output, name: \.key) { $0.value.write(into: &$1) }
        case .array(let values): CompactJSON.appendArray(values, to: &output) { $0.write(into: &$1) }
        case .string(let value): JSONString.append(value, to: &output)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .bool(let value): CompactJSON.appendBool(value, to: &output)
        case .null: CompactJSON.appendNull(to: &output)
        }
    }
}
