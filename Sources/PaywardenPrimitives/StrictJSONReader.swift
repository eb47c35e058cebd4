/// ``StrictJSON``'s reader: one pass over the bytes, every rule checked as it reads. Recursion is
/// bounded by ``StrictJSON/Rules/maximumDepth`` (checked on entry to every value).
struct StrictJSONReader {
    typealias Value = StrictJSON.Value
    typealias Fault = StrictJSON.Fault
    typealias SyntaxError = StrictJSON.SyntaxError

    let bytes: UnsafeBufferPointer<UInt8>
    let rules: StrictJSON.Rules
    var position = 0
    var valueCount = 0

    init(bytes: UnsafeBufferPointer<UInt8>, rules: StrictJSON.Rules) {
        self.bytes = bytes
        self.rules = rules
    }

    var atEnd: Bool { position >= bytes.count }
    var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

    func error(_ fault: Fault) -> SyntaxError { SyntaxError(fault: fault, offset: position) }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    /// The value at `depth` (the document's own is at 1).
    mutating func value(depth: Int) throws(SyntaxError) -> Value {
        guard depth <= rules.maximumDepth else { throw error(.tooDeep(limit: rules.maximumDepth)) }
        valueCount += 1
        guard valueCount <= rules.maximumValues else { throw error(.tooManyValues(limit: rules.maximumValues)) }
        guard let byte = peek else { throw error(.endWhereValueExpected) }
        switch byte {
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        case UInt8(ascii: "["): return .array(try array(depth: depth))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = position
            try number()
            return .number(Array(UnsafeBufferPointer(rebasing: bytes[start..<position])))
        default: throw error(.unexpectedCharacterWhereValueExpected)
        }
    }

    private mutating func object(depth: Int) throws(SyntaxError) -> StrictJSON.Object {
        position += 1  // {
        var object = StrictJSON.Object()
        // The names are compared one by one while an object is token-sized, and hashed past that:
        // a 64 KB object of 8,000 short members made the one-by-one check quadratic.
        var names: Set<[UInt8]>?
        var texts: Set<String> = []
        try items(closing: UInt8(ascii: "}")) { reader throws(SyntaxError) in
            guard reader.peek == UInt8(ascii: "\"") else { throw reader.error(.expectedMemberName) }
            let name = try reader.string()
            let repeated: Bool
            switch reader.rules.repeatedNames {
            case .canonicallyEquivalent:
                repeated = !texts.insert(String(decoding: name, as: UTF8.self)).inserted
            case .sameBytes where object.members.count < Self.namesComparedOneByOne:
                repeated = object.members.contains { $0.name == name }
            case .sameBytes:
                if names == nil { names = Set(object.members.map(\.name)) }
                repeated = !names!.insert(name).inserted
            }
            if repeated { throw reader.error(.repeatedMemberName(name)) }
            reader.skipWhitespace()
            guard reader.peek == UInt8(ascii: ":") else { throw reader.error(.expectedColon) }
            reader.position += 1
            reader.skipWhitespace()
            object.members.append((name, try reader.value(depth: depth + 1)))
        }
        return object
    }

    /// More members than any object of a token has.
    static let namesComparedOneByOne = 16

    private mutating func array(depth: Int) throws(SyntaxError) -> [Value] {
        position += 1  // [
        var elements: [Value] = []
        try items(closing: UInt8(ascii: "]")) { reader throws(SyntaxError) in elements.append(try reader.value(depth: depth + 1)) }
        return elements
    }

    /// The members or elements up to `closing`, each read by `item`, separated by commas; none
    /// is allowed, a trailing comma is not (Foundation's reader accepts `[1,]`, RFC 8259 does not).
    private mutating func items(closing: UInt8, _ item: (inout StrictJSONReader) throws(SyntaxError) -> Void) throws(SyntaxError) {
        skipWhitespace()
        if peek == closing {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            try item(&self)
            skipWhitespace()
            guard peek == UInt8(ascii: ",") else {
                guard let byte = peek else { throw error(.endInsideContainer(closing: closing)) }
                guard byte == closing else { throw error(.expectedCommaOrClosing(closing: closing)) }
                position += 1
                return
            }
            position += 1
            skipWhitespace()
            if peek == closing { throw error(.trailingComma(closing: closing)) }
        }
    }

    private mutating func literal(_ word: StaticString) throws(SyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count,
            UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[position..<position + count])
        else { throw error(.invalidLiteral) }
        position += count
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(SyntaxError) {
        let start = position
        if peek == UInt8(ascii: "-") { position += 1 }
        if peek == UInt8(ascii: "0") {
            position += 1
        } else {
            guard digits() > 0 else { throw error(.expectedDigit(.integer)) }
        }
        if peek == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw error(.expectedDigit(.fraction)) }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            position += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw error(.expectedDigit(.exponent)) }
        }
        guard position - start <= rules.maximumNumberLength else { throw error(.numberTooLong(limit: rules.maximumNumberLength)) }
    }

    private mutating func digits() -> Int {
        let start = position
        while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        return position - start
    }

    /// A string's contents, escapes decoded; raw control characters and malformed UTF-8 are
    /// refused. (Outside strings, a byte over 0x7F is a syntax error anyway.) Runs between
    /// escapes are found eight bytes at a time and copied whole: a token's Base64 is most of
    /// its bytes, and Apple escapes every `/` in it.
    private mutating func string() throws(SyntaxError) -> [UInt8] {
        position += 1  // "
        let start = position
        var run = start
        var decoded: [UInt8]?
        var nonASCII = false
        while true {
            position = nextSpecialByte(from: position)
            guard position < bytes.count else { throw error(.endInsideString) }
            switch bytes[position] {
            case UInt8(ascii: "\""):
                var contents: [UInt8]
                if decoded == nil {
                    contents = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
                } else {
                    decoded!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<position]))
                    contents = decoded.take()!
                }
                guard contents.count <= rules.maximumStringBytes else { throw error(.stringTooLong(limit: rules.maximumStringBytes)) }
                position += 1
                if nonASCII, String(validating: contents, as: UTF8.self) == nil {
                    throw SyntaxError(fault: .stringNotUTF8(at: firstMalformedSequence(from: start)), offset: start)
                }
                return contents
            case UInt8(ascii: "\\"):
                if decoded == nil {
                    decoded = []
                    decoded!.reserveCapacity(min(bytes.count - start, 64 * 1024))
                }
                decoded!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<position]))
                position += 1
                guard let escape = peek else { throw error(.endInsideEscape) }
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded!.append(escape)
                case UInt8(ascii: "b"): decoded!.append(0x08)
                case UInt8(ascii: "f"): decoded!.append(0x0C)
                case UInt8(ascii: "n"): decoded!.append(0x0A)
                case UInt8(ascii: "r"): decoded!.append(0x0D)
                case UInt8(ascii: "t"): decoded!.append(0x09)
                case UInt8(ascii: "u"): decoded!.append(contentsOf: try unicodeEscape())
                default: throw error(.unknownEscape)
                }
                run = position
            case 0x80...:
                nonASCII = true
                position += 1
            default:
                throw error(.controlCharacterInString)
            }
        }
    }

    /// The index of the first `"`, `\\`, control character or non-ASCII byte at or after
    /// `index`, or the end.
    private func nextSpecialByte(from index: Int) -> Int {
        var index = index
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while bytes.count - index >= 8 {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // A byte is flagged when it is below 0x20, equal to `"` or `\\`, or 0x80 and up.
                let control = (word &- ones &* 0x20) & ~word
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let flagged = (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | word) & highs
                if flagged != 0 { break }
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return index }
            index += 1
        }
        return index
    }

    /// Where the first malformed UTF-8 sequence at or after `index` starts (an escape decodes to
    /// whole sequences, so the raw bytes are malformed exactly where the decoded ones are).
    private func firstMalformedSequence(from index: Int) -> Int {
        var index = index
        while index < bytes.count {
            let lead = bytes[index]
            let (length, minimum): (Int, UInt32) =
                switch lead {
                case 0..<0x80: (1, 0)
                case 0xC2...0xDF: (2, 0x80)
                case 0xE0...0xEF: (3, 0x800)
                case 0xF0...0xF4: (4, 0x10000)
                default: (0, 0)
                }
            guard length > 0, bytes.count - index >= length else { return index }
            var scalar = UInt32(lead) & (0xFF >> (length + 1))
            for offset in 1..<length {
                let continuation = bytes[index + offset]
                guard continuation & 0xC0 == 0x80 else { return index }
                scalar = scalar << 6 | UInt32(continuation & 0x3F)
            }
            guard length == 1 || (scalar >= minimum && scalar <= 0x10FFFF && !(0xD800...0xDFFF).contains(scalar)) else { return index }
            index += length
        }
        return index
    }

    /// `\uXXXX` (the `\u` read), a surrogate pair as two escapes: the scalar as UTF-8.
    private mutating func unicodeEscape() throws(SyntaxError) -> [UInt8] {
        var scalar = try hexQuad()
        if (0xD800...0xDBFF).contains(scalar) {
            guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
            else { throw error(.unpairedHighSurrogate) }
            position += 2
            let low = try hexQuad()
            guard (0xDC00...0xDFFF).contains(low) else { throw error(.unpairedHighSurrogate) }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw error(.loneLowSurrogate)
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw error(.invalidUnicodeEscape) }
        return Array(String(Character(unicode)).utf8)
    }

    private mutating func hexQuad() throws(SyntaxError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error(.endInsideUnicodeEscape) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error(.invalidUnicodeEscape)
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}
