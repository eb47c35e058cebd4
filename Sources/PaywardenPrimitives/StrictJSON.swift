/// The one strict JSON reader: RFC 8259 over UTF-8, the whole document checked (every value, also
/// the members a caller ignores) and kept, numbers as their text (amounts are passed on as
/// written, never rounded). The Apple Pay token and the processors' JSON messages both read
/// through it, so the two cannot disagree on what JSON is.
///
/// It refuses more than RFC 8259 requires: anything but UTF-8, trailing commas, nesting past
/// ``Rules/maximumDepth``, and a member name repeated in one object (a reader that keeps the first
/// and one that keeps the last would see different documents). Each caller words the ``Fault``
/// in its own error type.
public enum StrictJSON {
    /// A member's value.
    public indirect enum Value: Sendable {
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
    public struct Object: Sendable {
        public var members: [(name: [UInt8], value: Value)] = []

        public init() {}

        public subscript(name: StaticString) -> Value? {
            let key = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            return members.first { $0.name.count == key.count && $0.name.elementsEqual(key) }?.value
        }
    }

    /// What a document may hold. The defaults are the Apple Pay token's.
    public struct Rules: Sendable {
        public enum ByteOrderMark: Sendable {
            /// RFC 8259 §8.1 lets a reader refuse one.
            case refused
            /// Passed over, as RFC 8259 §8.1 also allows.
            case skipped
        }

        public enum NameEquality: Sendable {
            /// Two names are the same when their UTF-8 is.
            case sameBytes
            /// Two names are the same when Swift's `String` says so (canonical equivalence): for a
            /// caller that looks members up by `String`, which would see two such names as one.
            case canonicallyEquivalent
        }

        /// Deeper nesting is refused rather than followed (the reader recurses); the document's
        /// own value is at depth 1.
        public var maximumDepth: Int
        /// Most values (members' values and elements, recursively, and the document's own) in one document.
        public var maximumValues: Int
        /// Most bytes of one string, as UTF-8 once its escapes are decoded.
        public var maximumStringBytes: Int
        /// Most characters of one number.
        public var maximumNumberLength: Int
        public var byteOrderMark: ByteOrderMark
        public var repeatedNames: NameEquality

        public init(
            maximumDepth: Int = 64, maximumValues: Int = .max, maximumStringBytes: Int = .max, maximumNumberLength: Int = .max,
            byteOrderMark: ByteOrderMark = .refused, repeatedNames: NameEquality = .sameBytes
        ) {
            self.maximumDepth = maximumDepth
            self.maximumValues = maximumValues
            self.maximumStringBytes = maximumStringBytes
            self.maximumNumberLength = maximumNumberLength
            self.byteOrderMark = byteOrderMark
            self.repeatedNames = repeatedNames
        }
    }

    /// Why a document is not JSON (or not what ``Rules`` allow), with the byte offset where reading stopped.
    public struct SyntaxError: Error, Sendable {
        public let fault: Fault
        public let offset: Int

        /// The fault in a few words, as the token's messages have always said it.
        public var reason: String { fault.reason }
    }

    /// One kind of refusal each, so a caller can word them its own way.
    public enum Fault: Sendable, Hashable {
        public enum NumberPart: Sendable, Hashable {
            case integer, fraction, exponent
        }

        case byteOrderMark
        case notAnObject
        case dataAfterDocument
        case tooDeep(limit: Int)
        case tooManyValues(limit: Int)
        case endWhereValueExpected
        case unexpectedCharacterWhereValueExpected
        case invalidLiteral
        case expectedMemberName
        /// The name as it was read (escapes decoded).
        case repeatedMemberName([UInt8])
        case expectedColon
        /// `closing` is the `}` or `]` of the object or array the document ends in.
        case endInsideContainer(closing: UInt8)
        case expectedCommaOrClosing(closing: UInt8)
        case trailingComma(closing: UInt8)
        case expectedDigit(NumberPart)
        case numberTooLong(limit: Int)
        case endInsideString
        case endInsideEscape
        case unknownEscape
        case endInsideUnicodeEscape
        case invalidUnicodeEscape
        case loneLowSurrogate
        case unpairedHighSurrogate
        case controlCharacterInString
        /// The error's offset is where the string starts; `at` is where its first malformed
        /// sequence does.
        case stringNotUTF8(at: Int)
        case stringTooLong(limit: Int)

        var reason: String {
            switch self {
            case .byteOrderMark: "a byte order mark"
            case .notAnObject: "the document is not an object"
            case .dataAfterDocument: "unexpected data after the object"
            case .tooDeep(let limit): "nested deeper than \(limit) levels"
            case .tooManyValues(let limit): "more than \(limit) values"
            case .endWhereValueExpected, .unexpectedCharacterWhereValueExpected, .invalidLiteral: "expected a value"
            case .expectedMemberName: "expected a member name"
            case .repeatedMemberName: "a member name appears twice in one object"
            case .expectedColon: "expected ':'"
            case .endInsideContainer(let closing), .expectedCommaOrClosing(let closing):
                "expected ',' or '\(Character(Unicode.Scalar(closing)))'"
            case .trailingComma: "a trailing comma"
            case .expectedDigit(.integer): "expected a digit"
            case .expectedDigit(.fraction): "expected a digit after '.'"
            case .expectedDigit(.exponent): "expected a digit in the exponent"
            case .numberTooLong(let limit): "a number longer than \(limit) characters"
            case .endInsideString, .endInsideEscape: "an unterminated string"
            case .unknownEscape: "an unknown escape in a string"
            case .endInsideUnicodeEscape, .invalidUnicodeEscape: "an invalid \\u escape"
            case .loneLowSurrogate, .unpairedHighSurrogate: "a lone surrogate in a string"
            case .controlCharacterInString: "a control character in a string"
            case .stringNotUTF8: "a string that is not UTF-8"
            case .stringTooLong(let limit): "a string longer than \(limit) bytes"
            }
        }
    }

    /// Reads `bytes` as one JSON object (whitespace around it allowed).
    public static func object(_ bytes: [UInt8], rules: Rules = Rules()) throws(SyntaxError) -> Object {
        guard case .object(let object) = try document(bytes, rules: rules, requiringAnObject: true) else {
            preconditionFailure("the reader returned something other than the object it checked for")
        }
        return object
    }

    /// Reads `bytes` as one JSON value of any kind (whitespace around it allowed).
    public static func value(_ bytes: [UInt8], rules: Rules = Rules()) throws(SyntaxError) -> Value {
        try document(bytes, rules: rules, requiringAnObject: false)
    }

    private static func document(_ bytes: [UInt8], rules: Rules, requiringAnObject: Bool) throws(SyntaxError) -> Value {
        try bytes.withUnsafeBufferPointer { buffer throws(SyntaxError) in
            var reader = StrictJSONReader(bytes: buffer, rules: rules)
            if buffer.starts(with: [0xEF, 0xBB, 0xBF]) {
                guard rules.byteOrderMark == .skipped else { throw reader.error(.byteOrderMark) }
                reader.position = 3
            }
            reader.skipWhitespace()
            if requiringAnObject, reader.peek != UInt8(ascii: "{") { throw reader.error(.notAnObject) }
            let value = try reader.value(depth: 1)
            reader.skipWhitespace()
            guard reader.atEnd else { throw reader.error(.dataAfterDocument) }
            return value
        }
    }
}
