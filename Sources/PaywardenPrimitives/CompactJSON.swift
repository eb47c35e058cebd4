/// Compact JSON (no whitespace) written by hand: an array's or object's brackets and commas, and
/// the literals. Each JSON value type says what its elements and members are; how they are
/// joined is written once here, strings by ``JSONString``.
public enum CompactJSON {
    @inlinable
    public static func appendArray<Elements: Sequence>(
        _ elements: Elements, to output: inout [UInt8], _ appendElement: (Elements.Element, inout [UInt8]) -> Void
    ) {
        output.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            appendElement(element, &output)
        }
        output.append(UInt8(ascii: "]"))
    }

    /// `members` in the order given, each named by `name` and its value written by `appendValue`.
    @inlinable
    public static func appendObject<Members: Sequence>(
        _ members: Members, to output: inout [UInt8], name: (Members.Element) -> String,
        _ appendValue: (Members.Element, inout [UInt8]) -> Void
    ) {
        output.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONString.append(name(member), to: &output)
            output.append(UInt8(ascii: ":"))
            appendValue(member, &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    @inlinable
    public static func appendBool(_ value: Bool, to output: inout [UInt8]) {
        output.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    @inlinable
    public static func appendNull(to output: inout [UInt8]) {
        output.append(contentsOf: "null".utf8)
    }
}
