/// A strict RFC 8259 parser: one value, no trailing content, no duplicate keys, no lone surrogates,
/// every limit checked as it reads. Recursion is bounded by `maximumDepth` (checked on entry), so
/// 10,000 nested brackets fail at the 33rd, far from the stack's end.
struct ProcessorJSONParser {
    let bytes: [UInt8]
    let format: ProcessorMessageError.Format
    let limits: ProcessorJSON.Limits
    var position = 0
    var valueCount = 0

    init(bytes: [UInt8], format: ProcessorMessageError.Format, limits: ProcessorJSON.Limits) {
        self.bytes = bytes
        self.format = format
        self.limits = limits
    }

    mutating func parseDocument() throws(ProcessorMessageError) -> ProcessorJSON {
        guard bytes.count <= limits.maximumBytes else {
            throw failure("the body is \(bytes.count) bytes; the limit is \(limits.maximumBytes)")
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        skipWhitespace()
        let value = try parseValue(depth: 1)
        skipWhitespace()
        guard position == bytes.count else { throw failure("content follows the JSON value") }
        return value
    }

    private func failure(_ message: String) -> ProcessorMessageError {
        ProcessorMessageError(format, .malformedJSON, field: nil, "\(message) (at byte \(position))")
    }

    private mutating func parseValue(depth: Int) throws(ProcessorMessageError) -> ProcessorJSON {
        guard depth <= limits.maximumDepth else { throw failure("values nest deeper than \(limits.maximumDepth) levels") }
        valueCount += 1
        guard valueCount <= limits.maximumValues else { throw failure("the body has more than \(limits.maximumValues) values") }
        guard position < bytes.count else { throw failure("the body ends where a value was expected") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character where a value was expected")
        }
    }

    private mutating func parseObject(depth: Int) throws(ProcessorMessageError) -> ProcessorJSON {
        position += 1
        var members: [ProcessorJSON.Member] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object([])
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
            let key = try parseString()
            guard !members.contains(where: { $0.key == key }) else {
                throw ProcessorMessageError(
                    format, .duplicateField, field: String(key.prefix(32)), "member appears twice (at byte \(position))")
            }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            members.append(ProcessorJSON.Member(key, try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard position < bytes.count else { throw failure("the body ends inside an object") }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func parseArray(depth: Int) throws(ProcessorMessageError) -> ProcessorJSON {
        position += 1
        var values: [ProcessorJSON] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array([])
        }
        while true {
            skipWhitespace()
            values.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard position < bytes.count else { throw failure("the body ends inside an array") }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(values)
            }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func parseString() throws(ProcessorMessageError) -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var byteCount = 0
        while true {
            guard position < bytes.count else { throw failure("the body ends inside a string") }
            let byte = bytes[position]
            let scalar: Unicode.Scalar
            if byte == UInt8(ascii: "\"") {
                position += 1
                return String(scalars)
            } else if byte == UInt8(ascii: "\\") {
                scalar = try parseEscape()
            } else if byte < 0x20 {
                throw failure("control characters must be escaped in strings")
            } else if byte < 0x80 {
                scalar = Unicode.Scalar(byte)
                position += 1
            } else {
                guard let (value, length) = ProcessorXMLParser.decodeUTF8(bytes, at: position), let decoded = Unicode.Scalar(value) else {
                    throw failure("invalid UTF-8 sequence")
                }
                scalar = decoded
                position += length
            }
            byteCount += scalar.utf8.count
            guard byteCount <= limits.maximumStringBytes else {
                throw failure("a string exceeds \(limits.maximumStringBytes) bytes")
            }
            scalars.append(scalar)
        }
    }

    private mutating func parseEscape() throws(ProcessorMessageError) -> Unicode.Scalar {
        guard position + 1 < bytes.count else { throw failure("the body ends inside an escape") }
        let code = bytes[position + 1]
        position += 2
        switch code {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{8}"
        case UInt8(ascii: "f"): return "\u{C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let high = try parseHex4()
            if (0xDC00...0xDFFF).contains(high) { throw failure("a lone low surrogate escape") }
            if (0xD800...0xDBFF).contains(high) {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                    throw failure("a high surrogate escape without its low surrogate")
                }
                position += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("a high surrogate escape without its low surrogate") }
                let value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                return Unicode.Scalar(value) ?? "\u{FFFD}"
            }
            return Unicode.Scalar(high) ?? "\u{FFFD}"
        default: throw failure("invalid escape in a string")
        }
    }

    private mutating func parseHex4() throws(ProcessorMessageError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw failure("the body ends inside a \\u escape") }
        var value: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | digit
        }
        position += 4
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, at most 64 characters.
    private mutating func parseNumber() throws(ProcessorMessageError) -> String {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw failure("invalid number") }
        if bytes[position] == UInt8(ascii: "0") { position += 1 } else { skipDigits() }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw failure("invalid number") }
            skipDigits()
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else { throw failure("invalid number") }
            skipDigits()
        }
        guard position - start <= 64 else { throw failure("a number is longer than 64 characters") }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while position < bytes.count, isDigit(bytes[position]) { position += 1 }
    }

    private mutating func literal(_ word: String) throws(ProcessorMessageError) {
        let expected = Array(word.utf8)
        guard position + expected.count <= bytes.count, Array(bytes[position..<position + expected.count]) == expected else {
            throw failure("invalid literal")
        }
        position += expected.count
    }

    private mutating func expect(_ byte: UInt8) throws(ProcessorMessageError) {
        guard position < bytes.count, bytes[position] == byte else { throw failure("expected '\(Character(Unicode.Scalar(byte)))'") }
        position += 1
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }
}
