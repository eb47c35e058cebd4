/// Length and shape checks shared by the three formats. Lengths are counted in Unicode scalars, as
/// XML Schema's `minLength`/`maxLength` count characters. Messages state the rule, never the value.
struct FieldRules {
    let format: ProcessorMessageError.Format

    func length(_ value: String, _ field: String, min: Int = 0, max: Int) throws(ProcessorMessageError) {
        let count = value.unicodeScalars.count
        if count < min {
            let rule = min == 1 ? "must not be empty" : "must be at least \(min) characters (got \(count))"
            throw ProcessorMessageError(format, .fieldTooShort, field: field, "\(field) \(rule)")
        }
        if count > max {
            throw ProcessorMessageError(format, .fieldTooLong, field: field, "\(field) must be at most \(max) characters (got \(count))")
        }
    }

    func digits(_ value: String, _ field: String, count range: ClosedRange<Int>) throws(ProcessorMessageError) {
        guard range.contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            let rule = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)–\(range.upperBound)"
            throw ProcessorMessageError(format, .invalidFormat, field: field, "\(field) must be \(rule) digits")
        }
    }

    func oneOf(_ value: String, _ field: String, _ allowed: [String]) throws(ProcessorMessageError) {
        guard allowed.contains(value) else {
            throw ProcessorMessageError(format, .invalidValue, field: field, "\(field) must be one of \(allowed.joined(separator: ", "))")
        }
    }

    func missing(_ field: String) -> ProcessorMessageError {
        ProcessorMessageError(format, .missingField, field: field, "\(field) is required")
    }

    func duplicate(_ field: String) -> ProcessorMessageError {
        ProcessorMessageError(format, .duplicateField, field: field, "\(field) must appear only once")
    }

    func unexpected(_ field: String, in parent: String) -> ProcessorMessageError {
        ProcessorMessageError(format, .unexpectedField, field: field, "\(field) is not allowed in \(parent)")
    }

    /// XML Schema `whiteSpace="collapse"`: trim, and runs of whitespace become one space.
    static func collapsed(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    }

    /// Base64 split over lines (as Radial's samples are) joined back: all XML whitespace removed.
    static func withoutWhitespace(_ value: String) -> String {
        String(value.unicodeScalars.filter { !($0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r") }.map(Character.init))
    }

    /// Standard Base64 alphabet with at most two trailing `=`, length a multiple of four.
    static func isBase64(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return false }
        let padding = bytes.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2 else { return false }
        return bytes.dropLast(padding).allSatisfy { byte in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
    }
}
