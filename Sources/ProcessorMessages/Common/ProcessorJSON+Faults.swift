import PaywardenPrimitives

extension ProcessorMessageError {
    /// A JSON body the shared reader refused, in the words processor errors have always used: a
    /// repeated member is a `duplicate_field` naming it, anything else `malformed_json` with
    /// where reading stopped.
    init(_ error: StrictJSON.SyntaxError, format: Format) {
        let message: String
        var offset = error.offset
        switch error.fault {
        case .repeatedMemberName(let name):
            self.init(
                format, .duplicateField, field: String(String(decoding: name, as: UTF8.self).prefix(32)),
                "member appears twice (at byte \(error.offset))")
            return
        // Not reachable with ProcessorJSON's rules (any value, a byte order mark passed over).
        case .byteOrderMark, .notAnObject: message = error.reason
        case .dataAfterDocument: message = "content follows the JSON value"
        case .tooDeep(let limit): message = "values nest deeper than \(limit) levels"
        case .tooManyValues(let limit): message = "the body has more than \(limit) values"
        case .endWhereValueExpected: message = "the body ends where a value was expected"
        case .unexpectedCharacterWhereValueExpected, .trailingComma(closing: UInt8(ascii: "]")):
            message = "unexpected character where a value was expected"
        case .invalidLiteral: message = "invalid literal"
        case .expectedMemberName, .trailingComma: message = "expected a member name"
        case .expectedColon: message = "expected ':'"
        case .endInsideContainer(let closing):
            message = closing == UInt8(ascii: "}") ? "the body ends inside an object" : "the body ends inside an array"
        case .expectedCommaOrClosing: message = "expected ','"
        case .expectedDigit: message = "invalid number"
        case .numberTooLong(let limit): message = "a number is longer than \(limit) characters"
        case .endInsideString: message = "the body ends inside a string"
        case .endInsideEscape: message = "the body ends inside an escape"
        case .unknownEscape: message = "invalid escape in a string"
        case .endInsideUnicodeEscape: message = "the body ends inside a \\u escape"
        case .invalidUnicodeEscape: message = "invalid \\u escape"
        case .loneLowSurrogate: message = "a lone low surrogate escape"
        case .unpairedHighSurrogate: message = "a high surrogate escape without its low surrogate"
        case .controlCharacterInString: message = "control characters must be escaped in strings"
        case .stringNotUTF8(let sequence):
            message = "invalid UTF-8 sequence"
            offset = sequence
        case .stringTooLong(let limit): message = "a string exceeds \(limit) bytes"
        }
        self.init(format, .malformedJSON, field: nil, "\(message) (at byte \(offset))")
    }
}
