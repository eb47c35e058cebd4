/// Character classes of XML 1.0 (Fifth Edition) §2.2 and §2.3, on Unicode scalar values.
enum XMLCharacterClasses {
    /// `Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]`
    static func isChar(_ value: UInt32) -> Bool {
        switch value {
        case 0x9, 0xA, 0xD: return true
        case 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    /// `S ::= (#x20 | #x9 | #xD | #xA)+`
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// `NameStartChar` without the colon, which namespaces reserve as the prefix separator.
    static func isNameStartChar(_ value: UInt32) -> Bool {
        switch value {
        case 0x41...0x5A, 0x61...0x7A, 0x5F: return true  // A-Z a-z _
        case 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF: return true
        case 0x370...0x37D, 0x37F...0x1FFF, 0x200C...0x200D: return true
        case 0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF: return true
        case 0xF900...0xFDCF, 0xFDF0...0xFFFD, 0x10000...0xEFFFF: return true
        default: return false
        }
    }

    /// `NameChar` without the colon.
    static func isNameChar(_ value: UInt32) -> Bool {
        if isNameStartChar(value) { return true }
        switch value {
        case 0x2D, 0x2E, 0x30...0x39, 0xB7: return true  // - . 0-9 middle dot
        case 0x300...0x36F, 0x203F...0x2040: return true
        default: return false
        }
    }
}
