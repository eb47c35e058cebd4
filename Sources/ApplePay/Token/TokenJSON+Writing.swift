import PaywardenPrimitives

extension TokenJSON.Value {
    /// The value as canonical JSON: members sorted by name (byte order, which for the ASCII names
    /// Apple uses is the order Foundation's `.sortedKeys` gives), no whitespace, `/` unescaped,
    /// numbers as written. Stored metadata is compared and merged in this form, so two writes of
    /// the same value are the same bytes.
    func writeCanonical(to output: inout [UInt8]) {
        switch self {
        case .string(let text): JSONString.append(String(decoding: text, as: UTF8.self), to: &output)
        case .number(let text): output.append(contentsOf: text)
        case .bool(let value): CompactJSON.appendBool(value, to: &output)
        case .null: CompactJSON.appendNull(to: &output)
        case .array(let elements): CompactJSON.appendArray(elements, to: &output) { $0.writeCanonical(to: &$1) }
        case .object(let object):
            CompactJSON.appendObject(
                object.members.sorted { $0.name.lexicographicallyPrecedes($1.name) }, to: &output,
                name: { String(decoding: $0.name, as: UTF8.self) }
            ) { $0.value.writeCanonical(to: &$1) }
        }
    }

    /// A string's text, or nil for any other value.
    var text: String? {
        guard case .string(let bytes) = self else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A string's text or a number as written: for the fields Apple has sent both ways
    /// (`transactionAmount` is a number at the top level and a string in an authentication response).
    var textOrNumber: String? {
        switch self {
        case .string(let bytes), .number(let bytes): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }
}
