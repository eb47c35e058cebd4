/// The checks on identifiers and strings that go into Apple URLs and bodies, or come back.
enum GatewayField {
    /// 1...`maximum` of [A-Za-z0-9._-], and not "." or ".." (a path component must stay one).
    static func isIdentifier(_ value: String, maximum: Int) -> Bool {
        (1...maximum).contains(value.utf8.count)
            && value.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
            && !value.utf8.allSatisfy { $0 == UInt8(ascii: ".") }
    }

    /// 1...`maximum` bytes of printable ASCII without spaces: what a merchant token identifier is.
    static func isPrintableToken(_ value: String, maximum: Int) -> Bool {
        (1...maximum).contains(value.utf8.count) && value.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    static func hasControlCharacters(_ value: String) -> Bool {
        value.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
    }

    /// A DNS host name: labels of letters, digits and inner hyphens, joined by dots.
    static func isDNSName(_ value: String) -> Bool {
        guard (1...253).contains(value.utf8.count) else { return false }
        let labels = value.split(separator: ".", omittingEmptySubsequences: false)
        return labels.allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
                && label.utf8.first != UInt8(ascii: "-") && label.utf8.last != UInt8(ascii: "-")
        }
    }

    /// Apple's free text, made safe for a log line or an error: control characters out, at most
    /// 256 characters.
    static func sanitized(_ value: String, limit: Int = 256) -> String {
        let cleaned = String(String.UnicodeScalarView(value.unicodeScalars.filter { !hasControlCharacters(String($0)) }))
        return cleaned.count > limit ? String(cleaned.prefix(limit)) + "…" : cleaned
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
