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

    public static func parse(
        _ bytes: [UInt8],
        format: ProcessorMessageError.Format,
        limits: Limits = .default
    ) throws(ProcessorMessageError) -> ProcessorJSON {
        var parser = ProcessorJSONParser(bytes: bytes, format: format, limits: limits)
        return try parser.parseDocument()
    }

    /// Compact UTF-8 JSON, members in order.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        write(into: &output)
        return output
    }

    private func write(into output: inout [UInt8]) {
        switch self {
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, into: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(into: &output)
            }
            output.append(UInt8(ascii: "}"))
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                value.write(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .string(let value): Self.writeString(value, into: &output)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .null: output.append(contentsOf: "null".utf8)
        }
    }

    static func writeString(_ value: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): output.append(contentsOf: "\\\\".utf8)
            case 0x0A: output.append(contentsOf: "\\n".utf8)
            case 0x0D: output.append(contentsOf: "\\r".utf8)
            case 0x09: output.append(contentsOf: "\\t".utf8)
            case 0..<0x20:
                let hex = String(byte, radix: 16)
                output.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
