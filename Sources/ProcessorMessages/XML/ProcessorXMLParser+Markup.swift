extension ProcessorXMLParser {
    // MARK: Start tags

    /// `<name (S attribute)* S? (/>|>)`, with namespaces resolved. Opens the element's namespace scope;
    /// the caller closes it (at once for an empty-element tag).
    mutating func parseStartTag(depth: Int) throws(ProcessorXMLError) -> (OpenElement, Bool) {
        let start = position
        guard depth <= limits.maximumDepth else {
            throw ProcessorXMLError(.depthLimitExceeded, "elements nest deeper than \(limits.maximumDepth) levels", at: start)
        }
        elementCount += 1
        guard elementCount <= limits.maximumElements else {
            throw ProcessorXMLError(.elementLimitExceeded, "the document has more than \(limits.maximumElements) elements", at: start)
        }
        position += 1
        let rawName = try parseRawName()
        var rawAttributes: [(name: String, value: String, offset: Int)] = []
        var selfClosing = false
        while true {
            let hadWhitespace = skipWhitespace()
            guard position < bytes.count else {
                throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends inside a start tag", at: position)
            }
            if bytes[position] == UInt8(ascii: ">") {
                position += 1
                break
            }
            if hasPrefix("/>") {
                position += 2
                selfClosing = true
                break
            }
            guard hadWhitespace else {
                throw ProcessorXMLError(.malformed, "attributes must be separated by whitespace", at: position)
            }
            let offset = position
            let name = try parseRawName()
            skipWhitespace()
            try expect(UInt8(ascii: "="), "'=' after an attribute name")
            skipWhitespace()
            let value = try parseAttributeValue()
            guard !rawAttributes.contains(where: { $0.name == name }) else {
                throw ProcessorXMLError(.duplicateAttribute, "attribute \(ProcessorXMLError.excerpt(name)) appears twice", at: offset)
            }
            rawAttributes.append((name, value, offset))
            guard rawAttributes.count <= limits.maximumAttributesPerElement else {
                let message = "an element has more than \(limits.maximumAttributesPerElement) attributes"
                throw ProcessorXMLError(.attributeLimitExceeded, message, at: offset)
            }
        }
        let element = try resolveNamespaces(rawName: rawName, rawAttributes: rawAttributes, at: start)
        return (OpenElement(element: element, rawName: rawName), selfClosing)
    }

    /// Splits namespace declarations from attributes, opens the scope and resolves every prefix.
    private mutating func resolveNamespaces(
        rawName: String,
        rawAttributes: [(name: String, value: String, offset: Int)],
        at start: Int
    ) throws(ProcessorXMLError) -> ProcessorXML.Element {
        var declarations: [ProcessorXML.NamespaceDeclaration] = []
        var plain: [(name: String, value: String, offset: Int)] = []
        for attribute in rawAttributes {
            if attribute.name == "xmlns" {
                declarations.append(.init(prefix: nil, namespaceURI: attribute.value))
            } else if attribute.name.hasPrefix("xmlns:") {
                let prefix = String(attribute.name.dropFirst(6))
                try checkDeclaration(prefix: prefix, uri: attribute.value, at: attribute.offset)
                declarations.append(.init(prefix: prefix, namespaceURI: attribute.value))
            } else {
                plain.append(attribute)
            }
        }
        if let uri = declarations.first(where: { $0.prefix == nil })?.namespaceURI,
            uri == ProcessorXML.xmlNamespaceURI || uri == ProcessorXML.xmlnsNamespaceURI
        {
            throw ProcessorXMLError(.invalidNamespaceDeclaration, "a reserved namespace cannot be the default", at: start)
        }
        scope.push(declarations)
        let name = try resolve(rawName, isAttribute: false, at: start)
        var attributes: [ProcessorXML.Attribute] = []
        for attribute in plain {
            let resolved = try resolve(attribute.name, isAttribute: true, at: attribute.offset)
            if attributes.contains(where: { $0.name.matches(resolved.localName, namespaceURI: resolved.namespaceURI) }) {
                let message = "attribute \(ProcessorXMLError.excerpt(attribute.name)) repeats a namespace-qualified name"
                throw ProcessorXMLError(.duplicateAttribute, message, at: attribute.offset)
            }
            attributes.append(ProcessorXML.Attribute(name: resolved, value: attribute.value))
        }
        return ProcessorXML.Element(name: name, attributes: attributes, namespaceDeclarations: declarations)
    }

    /// Namespaces in XML 1.0 §3: `xmlns` cannot be declared, `xml` only to its own URI, neither URI
    /// to another prefix, and a prefix cannot be undeclared (`xmlns:p=""`).
    private func checkDeclaration(prefix: String, uri: String, at offset: Int) throws(ProcessorXMLError) {
        let invalid: String?
        if prefix.isEmpty || prefix.contains(":") {
            invalid = "a namespace prefix must be a name without a colon"
        } else if prefix == "xmlns" {
            invalid = "the xmlns prefix cannot be declared"
        } else if prefix == "xml" {
            invalid = uri == ProcessorXML.xmlNamespaceURI ? nil : "the xml prefix cannot be rebound"
        } else if uri == ProcessorXML.xmlNamespaceURI || uri == ProcessorXML.xmlnsNamespaceURI {
            invalid = "a reserved namespace cannot be bound to another prefix"
        } else if uri.isEmpty {
            invalid = "a prefixed namespace cannot be undeclared in XML 1.0"
        } else {
            invalid = nil
        }
        if let invalid { throw ProcessorXMLError(.invalidNamespaceDeclaration, invalid, at: offset) }
    }

    /// Turns `prefix:local` into a qualified name. Unprefixed attributes are in no namespace.
    private func resolve(_ raw: String, isAttribute: Bool, at offset: Int) throws(ProcessorXMLError) -> ProcessorXML.QualifiedName {
        let parts = raw.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.allSatisfy({ !$0.isEmpty }), let local = parts.last else {
            throw ProcessorXMLError(.invalidName, "\(ProcessorXMLError.excerpt(raw)) is not a valid qualified name", at: offset)
        }
        guard let first = local.unicodeScalars.first, XMLCharacterClasses.isNameStartChar(first.value) else {
            throw ProcessorXMLError(.invalidName, "\(ProcessorXMLError.excerpt(raw)) has an invalid local name", at: offset)
        }
        let prefix = parts.count == 2 ? String(parts[0]) : nil
        if isAttribute, prefix == nil { return ProcessorXML.QualifiedName(localName: String(local)) }
        switch scope.resolve(prefix) {
        case .namespace(let uri):
            return ProcessorXML.QualifiedName(namespaceURI: uri, prefix: prefix, localName: String(local))
        case .none:
            return ProcessorXML.QualifiedName(prefix: prefix, localName: String(local))
        case .undeclared:
            let message = "prefix \(ProcessorXMLError.excerpt(prefix ?? "")) is not declared"
            throw ProcessorXMLError(.undeclaredNamespacePrefix, message, at: offset)
        }
    }

    // MARK: Names and values

    /// `Name ::= NameStartChar (NameChar)*`, colons allowed (checked later as a QName).
    mutating func parseRawName() throws(ProcessorXMLError) -> String {
        let start = position
        while position < bytes.count {
            let (scalar, length) = scalarAt(position)
            let isColon = scalar == UInt32(UInt8(ascii: ":"))
            let allowed =
                position == start
                ? XMLCharacterClasses.isNameStartChar(scalar) || isColon
                : XMLCharacterClasses.isNameChar(scalar) || isColon
            guard allowed else { break }
            position += length
        }
        guard position > start else {
            guard position < bytes.count else {
                throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends where a name was expected", at: position)
            }
            throw ProcessorXMLError(.invalidName, "a name was expected", at: start)
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// A quoted attribute value with references resolved and whitespace normalized (XML 1.0 §3.3.3).
    private mutating func parseAttributeValue() throws(ProcessorXMLError) -> String {
        guard position < bytes.count else {
            throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends where an attribute value was expected", at: position)
        }
        let quote = bytes[position]
        guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
            throw ProcessorXMLError(.malformed, "attribute values must be quoted", at: position)
        }
        let start = position
        position += 1
        var value: [UInt8] = []
        while true {
            guard position < bytes.count else {
                throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends inside an attribute value", at: position)
            }
            let byte = bytes[position]
            if byte == quote {
                position += 1
                break
            }
            switch byte {
            case UInt8(ascii: "<"):
                throw ProcessorXMLError(.malformed, "'<' is not allowed in an attribute value", at: position)
            case UInt8(ascii: "&"):
                value.append(contentsOf: try parseReference())
            case 0x0D:
                value.append(0x20)
                position += position + 1 < bytes.count && bytes[position + 1] == 0x0A ? 2 : 1
            case 0x09, 0x0A:
                value.append(0x20)
                position += 1
            default:
                value.append(byte)
                position += 1
            }
            guard value.count <= limits.maximumTextBytes else {
                throw ProcessorXMLError(.textLimitExceeded, "an attribute value exceeds \(limits.maximumTextBytes) bytes", at: start)
            }
        }
        return String(decoding: value, as: UTF8.self)
    }

    /// Character data up to the next `<` (or the end of input), appended to `text`.
    mutating func parseCharacterData(into text: inout [UInt8], start: Int) throws(ProcessorXMLError) {
        while position < bytes.count, bytes[position] != UInt8(ascii: "<") {
            let byte = bytes[position]
            if byte == UInt8(ascii: "&") {
                text.append(contentsOf: try parseReference())
            } else if byte == 0x0D {
                text.append(0x0A)
                position += position + 1 < bytes.count && bytes[position + 1] == 0x0A ? 2 : 1
            } else {
                if byte == UInt8(ascii: "]"), hasPrefix("]]>") {
                    throw ProcessorXMLError(.malformed, "']]>' is not allowed in character data", at: position)
                }
                text.append(byte)
                position += 1
            }
            guard text.count <= limits.maximumTextBytes else {
                throw ProcessorXMLError(.textLimitExceeded, "a text node exceeds \(limits.maximumTextBytes) bytes", at: start)
            }
        }
    }

    /// `&lt;` `&gt;` `&amp;` `&apos;` `&quot;` `&#N;` `&#xH;` as UTF-8; any other entity is refused.
    private mutating func parseReference() throws(ProcessorXMLError) -> [UInt8] {
        let start = position
        position += 1
        var name: [UInt8] = []
        while position < bytes.count, bytes[position] != UInt8(ascii: ";"), name.count < 32 {
            let byte = bytes[position]
            guard !XMLCharacterClasses.isWhitespace(byte), byte != UInt8(ascii: "<"), byte != UInt8(ascii: "&") else { break }
            name.append(byte)
            position += 1
        }
        guard position < bytes.count, bytes[position] == UInt8(ascii: ";"), !name.isEmpty else {
            throw ProcessorXMLError(.malformed, "'&' must start a reference ending in ';' (write &amp; for a literal '&')", at: start)
        }
        position += 1
        if name.first == UInt8(ascii: "#") { return try characterReference(name.dropFirst(), at: start) }
        guard XMLCharacterClasses.isNameStartChar(UInt32(name[0])) || name[0] >= 0x80 else {
            throw ProcessorXMLError(.malformed, "'&' must start a character or entity reference", at: start)
        }
        switch String(decoding: name, as: UTF8.self) {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "apos": return [UInt8(ascii: "'")]
        case "quot": return [UInt8(ascii: "\"")]
        case let other:
            let message = "entity &\(ProcessorXMLError.excerpt(other)); is not one of the five predefined entities"
            throw ProcessorXMLError(.entityForbidden, message, at: start)
        }
    }

    private func characterReference(_ digits: ArraySlice<UInt8>, at start: Int) throws(ProcessorXMLError) -> [UInt8] {
        var body = digits
        let radix: UInt32 = body.first == UInt8(ascii: "x") ? 16 : 10
        if radix == 16 { body = body.dropFirst() }
        var value: UInt32 = 0
        for byte in body {
            guard let digit = Self.digitValue(byte, radix: radix), value <= 0x10FFFF else {
                throw ProcessorXMLError(.invalidCharacterReference, "a character reference has invalid digits", at: start)
            }
            value = value * radix + digit
        }
        guard !body.isEmpty, XMLCharacterClasses.isChar(value), let scalar = Unicode.Scalar(value) else {
            throw ProcessorXMLError(.invalidCharacterReference, "a character reference names a character XML does not allow", at: start)
        }
        return Array(String(Character(scalar)).utf8)
    }

    private static func digitValue(_ byte: UInt8, radix: UInt32) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F") where radix == 16: return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    // MARK: Cursor helpers

    func hasPrefix(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { literalBytes in
            for index in 0..<count where bytes[position + index] != literalBytes[index] { return false }
            return true
        }
    }

    @discardableResult
    mutating func skipWhitespace() -> Bool {
        let start = position
        while position < bytes.count, XMLCharacterClasses.isWhitespace(bytes[position]) { position += 1 }
        return position > start
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(ProcessorXMLError) {
        guard position < bytes.count else {
            throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends where \(what) was expected", at: position)
        }
        guard bytes[position] == byte else { throw ProcessorXMLError(.malformed, "expected \(what)", at: position) }
        position += 1
    }

    /// The scalar at an index of input already validated as UTF-8.
    func scalarAt(_ index: Int) -> (UInt32, Int) {
        let byte = bytes[index]
        if byte < 0x80 { return (UInt32(byte), 1) }
        return Self.decodeUTF8(bytes, at: index) ?? (0xFFFD, 1)
    }

    /// CR LF and lone CR become LF (XML 1.0 §2.11).
    func normalizedLineEnds(_ slice: ArraySlice<UInt8>) -> String {
        var result: [UInt8] = []
        result.reserveCapacity(slice.count)
        var index = slice.startIndex
        while index < slice.endIndex {
            if slice[index] == 0x0D {
                result.append(0x0A)
                index += index + 1 < slice.endIndex && slice[index + 1] == 0x0A ? 2 : 1
            } else {
                result.append(slice[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}
