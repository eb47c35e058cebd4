// Why a hand-written parser and not FoundationXML's XMLParser (libxml2):
//
// swift-corelibs-foundation's Sources/FoundationXML/XMLParser.swift (swiftlang/swift-corelibs-foundation,
// read at commit 090c9656a71d4eb483201e253f2ab2f0b7861d8f) builds its libxml2 push parser in
// `parseData(_:lastChunkOfData:)` with
//
//     // Prepare options (substitute entities, recover on errors)
//     var options = _kCFXMLInterfaceRecover | _kCFXMLInterfaceNoEnt
//
// i.e. XML_PARSE_RECOVER | XML_PARSE_NOENT on every parse, with no way for the caller to clear them.
// RECOVER means malformed input is repaired and reported as a success path to the delegate (unclosed
// tags, bad characters), so "well-formed" cannot be enforced; NOENT means internal entities declared
// in a DTD are substituted into the text the delegate sees, which is exactly the billion-laughs
// expansion surface. The parser also hands DTD declarations to libxml2's SAX2 handlers
// (`_CFXMLInterfaceSAX2InternalSubset`, `_CFXMLInterfaceSAX2UnparsedEntityDecl`), so refusing a DTD
// would depend on catching delegate callbacks after libxml2 has already processed it. Neither option
// can be turned off from Swift, and entity expansion happens before any limit of ours could apply.
//
// The processor formats need a small XML 1.0 subset: elements, attributes, namespaces, text, CDATA,
// comments, the XML declaration, five predefined entities and numeric character references. This file
// parses exactly that, iteratively (no recursion, so nesting depth never touches the stack), checks
// every limit while it reads, and refuses everything else with a typed error.

/// A strict, iterative XML 1.0 parser for the subset described above.
struct ProcessorXMLParser {
    let bytes: [UInt8]
    let limits: ProcessorXML.Limits
    var position = 0
    var elementCount = 0
    var scope = XMLNamespaceScope()

    /// An element being built, with the name as written so its end tag can be matched byte for byte.
    struct OpenElement {
        var element: ProcessorXML.Element
        var rawName: String
    }

    init(bytes: [UInt8], limits: ProcessorXML.Limits) {
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: Document

    mutating func parseDocument() throws(ProcessorXMLError) -> ProcessorXML.Document {
        guard bytes.count <= limits.maximumBytes else {
            throw ProcessorXMLError(.inputTooLarge, "document is \(bytes.count) bytes; the limit is \(limits.maximumBytes)", at: 0)
        }
        try skipByteOrderMark()
        try validateEncoding()
        var declaration: ProcessorXML.Document.Declaration?
        if hasPrefix("<?xml"), position + 5 < bytes.count, XMLCharacterClasses.isWhitespace(bytes[position + 5]) {
            declaration = try parseDeclaration()
        }
        let prolog = try parseMisc(beforeRoot: true)
        guard position < bytes.count else {
            throw ProcessorXMLError(.missingRootElement, "the document has no root element", at: position)
        }
        let root = try parseRootElement()
        let epilog = try parseMisc(beforeRoot: false)
        return ProcessorXML.Document(declaration: declaration, prolog: prolog, root: root, epilog: epilog)
    }

    /// Comments and whitespace before or after the root element. Stops at the root's `<` (before) or
    /// at the end of input (after).
    private mutating func parseMisc(beforeRoot: Bool) throws(ProcessorXMLError) -> [ProcessorXML.Node] {
        var nodes: [ProcessorXML.Node] = []
        while position < bytes.count {
            let start = position
            if XMLCharacterClasses.isWhitespace(bytes[position]) {
                while position < bytes.count, XMLCharacterClasses.isWhitespace(bytes[position]) { position += 1 }
                nodes.append(.text(normalizedLineEnds(bytes[start..<position])))
            } else if hasPrefix("<!--") {
                nodes.append(.comment(try parseComment()))
            } else if hasPrefix("<!") {
                try refuseDeclaration()
            } else if hasPrefix("<?") {
                try refuseProcessingInstruction()
            } else if bytes[position] == UInt8(ascii: "<"), beforeRoot {
                return nodes
            } else {
                let what = beforeRoot ? "text before the root element" : "content after the root element"
                throw ProcessorXMLError(beforeRoot ? .malformed : .contentAfterRootElement, what, at: position)
            }
        }
        return nodes
    }

    // MARK: Elements

    /// Parses the root element and everything in it with an explicit stack.
    private mutating func parseRootElement() throws(ProcessorXMLError) -> ProcessorXML.Element {
        var stack: [OpenElement] = []
        var text: [UInt8] = []
        var textStart = position
        while true {
            guard position < bytes.count else {
                throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends inside an element", at: position)
            }
            guard !stack.isEmpty else {
                // Only the root's start tag may come here: parseMisc stopped at a '<' that opens no
                // comment, declaration or processing instruction.
                guard !hasPrefix("</") else {
                    throw ProcessorXMLError(.malformed, "an end tag without an open element", at: position)
                }
                let (open, selfClosing) = try parseStartTag(depth: 1)
                if selfClosing {
                    scope.pop()
                    return open.element
                }
                stack.append(open)
                continue
            }
            if bytes[position] != UInt8(ascii: "<") {
                if text.isEmpty { textStart = position }
                try parseCharacterData(into: &text, start: textStart)
                continue
            }
            flushText(&text, into: &stack)
            let top = stack.count - 1
            if hasPrefix("</") {
                let closed = try parseEndTag(matching: &stack)
                if stack.isEmpty { return closed }
                stack[stack.count - 1].element.children.append(.element(closed))
            } else if hasPrefix("<!--") {
                stack[top].element.children.append(.comment(try parseComment()))
            } else if hasPrefix("<![CDATA[") {
                stack[top].element.children.append(.cdata(try parseCDATA()))
            } else if hasPrefix("<!") {
                try refuseDeclaration()
            } else if hasPrefix("<?") {
                try refuseProcessingInstruction()
            } else {
                let (open, selfClosing) = try parseStartTag(depth: stack.count + 1)
                if selfClosing {
                    scope.pop()
                    stack[top].element.children.append(.element(open.element))
                } else {
                    stack.append(open)
                }
            }
        }
    }

    private func flushText(_ text: inout [UInt8], into stack: inout [OpenElement]) {
        guard !text.isEmpty, !stack.isEmpty else { return }
        stack[stack.count - 1].element.children.append(.text(String(decoding: text, as: UTF8.self)))
        text.removeAll(keepingCapacity: true)
    }

    /// `</name S? >`: must close the innermost open element, by the name exactly as written.
    private mutating func parseEndTag(matching stack: inout [OpenElement]) throws(ProcessorXMLError) -> ProcessorXML.Element {
        let start = position
        position += 2
        let name = try parseRawName()
        skipWhitespace()
        try expect(UInt8(ascii: ">"), "'>' to close the end tag")
        guard let open = stack.popLast() else {
            throw ProcessorXMLError(.malformed, "an end tag without an open element", at: start)
        }
        guard open.rawName == name else {
            let message = "end tag </\(ProcessorXMLError.excerpt(name))> does not close <\(ProcessorXMLError.excerpt(open.rawName))>"
            throw ProcessorXMLError(.mismatchedEndTag, message, at: start)
        }
        scope.pop()
        return open.element
    }

    // MARK: Encoding

    private mutating func skipByteOrderMark() throws(ProcessorXMLError) {
        if hasPrefix("\u{FEFF}") {
            position = 3
            return
        }
        if bytes.count >= 2, (bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE) {
            throw ProcessorXMLError(.unsupportedEncoding, "UTF-16 input is not accepted; send UTF-8", at: 0)
        }
    }

    /// One pass over the whole input: strict UTF-8 (no overlong forms, no surrogates, nothing above
    /// U+10FFFF) and every scalar an XML `Char`. Afterwards the parser can decode without checks.
    private func validateEncoding() throws(ProcessorXMLError) {
        var index = position
        while index < bytes.count {
            let lead = bytes[index]
            if lead < 0x80 {
                guard XMLCharacterClasses.isChar(UInt32(lead)) else {
                    throw ProcessorXMLError(.invalidCharacter, "control character U+\(hex(UInt32(lead))) is not allowed in XML", at: index)
                }
                index += 1
                continue
            }
            guard let (scalar, length) = Self.decodeUTF8(bytes, at: index) else {
                throw ProcessorXMLError(.invalidUTF8, "invalid UTF-8 sequence", at: index)
            }
            guard XMLCharacterClasses.isChar(scalar) else {
                throw ProcessorXMLError(.invalidCharacter, "character U+\(hex(scalar)) is not allowed in XML", at: index)
            }
            index += length
        }
    }

    /// Decodes one multi-byte UTF-8 sequence strictly; nil when it is not well-formed.
    static func decodeUTF8(_ bytes: [UInt8], at index: Int) -> (UInt32, Int)? {
        let lead = bytes[index]
        let length: Int
        let minimum: UInt32
        var value: UInt32
        switch lead {
        case 0xC2...0xDF:
            length = 2
            minimum = 0x80
            value = UInt32(lead & 0x1F)
        case 0xE0...0xEF:
            length = 3
            minimum = 0x800
            value = UInt32(lead & 0x0F)
        case 0xF0...0xF4:
            length = 4
            minimum = 0x10000
            value = UInt32(lead & 0x07)
        default: return nil
        }
        guard index + length <= bytes.count else { return nil }
        for offset in 1..<length {
            let continuation = bytes[index + offset]
            guard continuation & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(continuation & 0x3F)
        }
        guard value >= minimum, value <= 0x10FFFF, !(0xD800...0xDFFF).contains(value) else { return nil }
        return (value, length)
    }

    func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
