/// The strict JSON reader behind ``PaymentToken/init(json:)`` and ``DecryptedPayment/init(json:)``:
/// RFC 8259 over UTF-8, the whole document checked (every value, also the members the reader's
/// caller ignores) and kept, numbers as their text (a payload's amounts are passed on as written).
///
/// Foundation's JSON reader built a dictionary of `Any` per token and bridged every
/// string: about a tenth of a decryption's CPU on Linux (docs/operations.md, "Performance"). This reader
/// accepts no more than it did and refuses more: anything but UTF-8 (it detected UTF-16 and
/// UTF-32) and a byte order mark, trailing commas, nesting past 64 levels, and a member name
/// repeated in one object (a reader that keeps the first and one that keeps the last would see
/// different tokens).
struct TokenJSON {
    /// A member's value.
    indirect enum Value: Sendable {
        /// The string's characters as UTF-8, escapes decoded.
        case string([UInt8])
        case object(Object)
        /// The number as written (RFC 8259 syntax, checked): never converted, so never rounded.
        case number([UInt8])
        case array([Value])
        case bool(Bool)
        case null
    }

    /// An object's members in document order; names are unique.
    struct Object: Sendable {
        var members: [(name: [UInt8], value: Value)] = []

        subscript(name: StaticString) -> Value? {
            let key = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            return members.first { $0.name.count == key.count && $0.name.elementsEqual(key) }?.value
        }
    }

    /// Why a document is not JSON, with the byte offset where reading stopped.
    struct SyntaxError: Error {
        let reason: String
        let offset: Int
    }

    /// Deeper nesting is refused rather than followed (the reader recurses).
    static let maximumDepth = 64

    /// Reads `bytes` as one JSON object (whitespace around it allowed).
    static func object(_ bytes: [UInt8]) throws(SyntaxError) -> Object {
        try bytes.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            var reader = Reader(bytes: buffer)
            // RFC 8259 §8.1 lets a reader refuse one; a token never starts with one.
            guard !buffer.starts(with: [0xEF, 0xBB, 0xBF]) else { throw reader.error("a byte order mark") }
            reader.skipWhitespace()
            guard reader.peek == UInt8(ascii: "{") else { throw reader.error("the document is not an object") }
            guard case .object(let object) = try reader.value(depth: 0) else { throw reader.error("the document is not an object") }
            reader.skipWhitespace()
            guard reader.atEnd else { throw reader.error("unexpected data after the object") }
            return object
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        var atEnd: Bool { position >= bytes.count }
        var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

        func error(_ reason: String) -> SyntaxError { SyntaxError(reason: reason, offset: position) }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8, _ what: String) throws(SyntaxError) {
            guard peek == byte else { throw error("expected \(what)") }
            position += 1
        }

        mutating func value(depth: Int) throws(SyntaxError) -> Value {
            guard depth < TokenJSON.maximumDepth else { throw error("nested deeper than \(TokenJSON.maximumDepth) levels") }
            guard let byte = peek else { throw error("expected a value") }
            switch byte {
            case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
            case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
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
            default: throw error("expected a value")
            }
        }

        mutating func object(depth: Int) throws(SyntaxError) -> Object {
            position += 1  // {
            var object = Object()
            // The names are compared one by one while an object is token-sized, and hashed past that:
            // a 64 KB object of 8,000 short members made the one-by-one check quadratic.
            var names: Set<[UInt8]>?
            try items(closing: UInt8(ascii: "}")) { reader throws(SyntaxError) in
                guard reader.peek == UInt8(ascii: "\"") else { throw reader.error("expected a member name") }
                let name = try reader.string()
                let repeated: Bool
                if object.members.count < Self.namesComparedOneByOne {
                    repeated = object.members.contains { $0.name == name }
                } else {
                    if names == nil { names = Set(object.members.map(\.name)) }
                    repeated = !names!.insert(name).inserted
                }
                if repeated { throw reader.error("a member name appears twice in one object") }
                reader.skipWhitespace()
                try reader.expect(UInt8(ascii: ":"), "':'")
                reader.skipWhitespace()
                object.members.append((name, try reader.value(depth: depth)))
            }
            return object
        }

        /// More members than any object of a token has.
        static let namesComparedOneByOne = 16

        mutating func array(depth: Int) throws(SyntaxError) -> [Value] {
            position += 1  // [
            var elements: [Value] = []
            try items(closing: UInt8(ascii: "]")) { reader throws(SyntaxError) in elements.append(try reader.value(depth: depth)) }
            return elements
        }

        /// The members or elements up to `closing`, each read by `item`, separated by commas; none
        /// is allowed, a trailing comma is not (Foundation's reader accepts `[1,]`, RFC 8259 does not).
        mutating func items(closing: UInt8, _ item: (inout Reader) throws(SyntaxError) -> Void) throws(SyntaxError) {
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
                    try expect(closing, "',' or '\(Character(Unicode.Scalar(closing)))'")
                    return
                }
                position += 1
                skipWhitespace()
                if peek == closing { throw error("a trailing comma") }
            }
        }

        mutating func literal(_ word: StaticString) throws(SyntaxError) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - position >= count,
                UnsafeBufferPointer(start: word.utf8Start, count: count).elementsEqual(bytes[position..<position + count])
            else { throw error("expected a value") }
            position += count
        }

        mutating func number() throws(SyntaxError) {
            if peek == UInt8(ascii: "-") { position += 1 }
            if peek == UInt8(ascii: "0") {
                position += 1
            } else {
                guard try digits() > 0 else { throw error("expected a digit") }
            }
            if peek == UInt8(ascii: ".") {
                position += 1
                guard try digits() > 0 else { throw error("expected a digit after '.'") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                position += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { position += 1 }
                guard try digits() > 0 else { throw error("expected a digit in the exponent") }
            }
        }

        mutating func digits() throws(SyntaxError) -> Int {
            let start = position
            while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
            return position - start
        }

        /// A string's contents, escapes decoded; raw control characters and malformed UTF-8 are
        /// refused. (Outside strings, a byte over 0x7F is a syntax error anyway.) Runs between
        /// escapes are found eight bytes at a time and copied whole: a token's Base64 is most of
        /// its bytes, and Apple escapes every `/` in it.
        mutating func string() throws(SyntaxError) -> [UInt8] {
            position += 1  // "
            let start = position
            var run = start
            var decoded: [UInt8]?
            var nonASCII = false
            while true {
                position = nextSpecialByte(from: position)
                guard position < bytes.count else { throw error("an unterminated string") }
                switch bytes[position] {
                case UInt8(ascii: "\""):
                    var contents: [UInt8]
                    if decoded == nil {
                        contents = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
                    } else {
                        decoded!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<position]))
                        contents = decoded.take()!
                    }
                    position += 1
                    if nonASCII { try checkUTF8(contents, from: start) }
                    return contents
                case UInt8(ascii: "\\"):
                    if decoded == nil {
                        decoded = []
                        decoded!.reserveCapacity(min(bytes.count - start, 64 * 1024))
                    }
                    decoded!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<position]))
                    position += 1
                    guard let escape = peek else { throw error("an unterminated string") }
                    position += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded!.append(escape)
                    case UInt8(ascii: "b"): decoded!.append(0x08)
                    case UInt8(ascii: "f"): decoded!.append(0x0C)
                    case UInt8(ascii: "n"): decoded!.append(0x0A)
                    case UInt8(ascii: "r"): decoded!.append(0x0D)
                    case UInt8(ascii: "t"): decoded!.append(0x09)
                    case UInt8(ascii: "u"): decoded!.append(contentsOf: try unicodeEscape())
                    default: throw error("an unknown escape in a string")
                    }
                    run = position
                case 0x80...:
                    nonASCII = true
                    position += 1
                default:
                    throw error("a control character in a string")
                }
            }
        }

        /// The index of the first `"`, `\\`, control character or non-ASCII byte at or after
        /// `index`, or the end.
        func nextSpecialByte(from index: Int) -> Int {
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

        func checkUTF8(_ contents: [UInt8], from start: Int) throws(SyntaxError) {
            guard String(validating: contents, as: UTF8.self) != nil else {
                throw SyntaxError(reason: "a string that is not UTF-8", offset: start)
            }
        }

        /// `\uXXXX` (the `\u` read), a surrogate pair as two escapes: the scalar as UTF-8.
        mutating func unicodeEscape() throws(SyntaxError) -> [UInt8] {
            var scalar = try hexQuad()
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes.count - position >= 2, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                else { throw error("a lone surrogate in a string") }
                position += 2
                let low = try hexQuad()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("a lone surrogate in a string") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("a lone surrogate in a string")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("an invalid \\u escape") }
            return Array(String(Character(unicode)).utf8)
        }

        mutating func hexQuad() throws(SyntaxError) -> UInt32 {
            guard bytes.count - position >= 4 else { throw error("an invalid \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error("an invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }
    }
}
