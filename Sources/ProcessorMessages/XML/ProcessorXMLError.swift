/// Why an XML document was refused. Each limit and each forbidden construct has its own code, so a
/// caller (and a metric) can tell a billion-laughs attempt from a truncated upload. Messages say which
/// rule and where (byte offset); they quote at most a short, sanitized prefix of a name, never text.
public struct ProcessorXMLError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable, CaseIterable {
        case inputTooLarge = "input_too_large"
        case depthLimitExceeded = "depth_limit_exceeded"
        case elementLimitExceeded = "element_limit_exceeded"
        case attributeLimitExceeded = "attribute_limit_exceeded"
        case textLimitExceeded = "text_limit_exceeded"
        case doctypeForbidden = "doctype_forbidden"
        case entityForbidden = "entity_forbidden"
        case processingInstructionForbidden = "processing_instruction_forbidden"
        case unsupportedEncoding = "unsupported_encoding"
        case invalidUTF8 = "invalid_utf8"
        case invalidCharacter = "invalid_character"
        case invalidCharacterReference = "invalid_character_reference"
        case invalidName = "invalid_name"
        case duplicateAttribute = "duplicate_attribute"
        case undeclaredNamespacePrefix = "undeclared_namespace_prefix"
        case invalidNamespaceDeclaration = "invalid_namespace_declaration"
        case mismatchedEndTag = "mismatched_end_tag"
        case unexpectedEndOfInput = "unexpected_end_of_input"
        case missingRootElement = "missing_root_element"
        case contentAfterRootElement = "content_after_root_element"
        case malformed = "malformed"
    }

    public let code: Code
    public let message: String
    /// Byte offset in the input where the problem was detected.
    public let offset: Int

    public init(_ code: Code, _ message: String, at offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    public var description: String { "\(code.rawValue): \(message) (at byte \(offset))" }

    /// A name made safe to quote in a message: at most 24 printable ASCII characters, and no more
    /// than four digits in all (the rest become `#`), so no account number can ride along in a name.
    static func excerpt(_ name: String) -> String {
        var result = ""
        var digits = 0
        for scalar in name.unicodeScalars.prefix(24) {
            if ("0"..."9").contains(scalar) {
                digits += 1
                result.unicodeScalars.append(digits <= 4 ? scalar : "#")
            } else {
                result.unicodeScalars.append(scalar.isASCII && scalar.value >= 0x20 && scalar.value < 0x7F ? scalar : "?")
            }
        }
        return name.unicodeScalars.count > 24 ? result + "…" : result
    }
}
