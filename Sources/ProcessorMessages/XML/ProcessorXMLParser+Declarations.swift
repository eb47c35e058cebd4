extension ProcessorXMLParser {
    /// `<!-- ... -->`; `--` may not occur inside (XML 1.0 §2.5).
    mutating func parseComment() throws(ProcessorXMLError) -> String {
        try sectionText(opening: 4, closing: "-->", refusing: "--", "a comment")
    }

    /// `<![CDATA[ ... ]]>`
    mutating func parseCDATA() throws(ProcessorXMLError) -> String {
        try sectionText(opening: 9, closing: "]]>", refusing: nil, "a CDATA section")
    }

    /// The text of the comment or CDATA section at `position` (its `opening` bytes long, `<!--` or
    /// `<![CDATA[`) up to `closing`, line ends normalized, at most ``ProcessorXML/Limits/maximumTextBytes``;
    /// `forbidden` may not occur inside except where it starts `closing`.
    private mutating func sectionText(
        opening: Int, closing: StaticString, refusing forbidden: StaticString?, _ what: String
    ) throws(ProcessorXMLError) -> String {
        let start = position
        position += opening
        let contentStart = position
        while position < bytes.count {
            if hasPrefix(closing) {
                let content = normalizedLineEnds(bytes[contentStart..<position])
                position += closing.utf8CodeUnitCount
                return content
            }
            if let forbidden, hasPrefix(forbidden) {
                // Cut off right after it: the end of the input, not the forbidden text, is the fault.
                guard position + forbidden.utf8CodeUnitCount < bytes.count else { break }
                throw ProcessorXMLError(.malformed, "'\(forbidden)' is not allowed inside \(what)", at: position)
            }
            position += 1
            guard position - contentStart <= limits.maximumTextBytes else {
                throw ProcessorXMLError(.textLimitExceeded, "\(what) exceeds \(limits.maximumTextBytes) bytes", at: start)
            }
        }
        throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends inside \(what)", at: start)
    }

    /// Every `<!` that is not a comment or CDATA: a DTD, or a markup declaration outside one.
    func refuseDeclaration() throws(ProcessorXMLError) -> Never {
        if hasPrefix("<!DOCTYPE") {
            throw ProcessorXMLError(.doctypeForbidden, "document type declarations (DTDs) are not accepted", at: position)
        }
        if hasPrefix("<!ENTITY") {
            throw ProcessorXMLError(.entityForbidden, "entity declarations are not accepted", at: position)
        }
        throw ProcessorXMLError(.malformed, "markup declarations are not accepted", at: position)
    }

    /// Every `<?` other than the XML declaration at the very start.
    func refuseProcessingInstruction() throws(ProcessorXMLError) -> Never {
        if hasPrefix("<?xml"), position + 5 < bytes.count, XMLCharacterClasses.isWhitespace(bytes[position + 5]) {
            let message = "the XML declaration is allowed only at the start of the document"
            throw ProcessorXMLError(.processingInstructionForbidden, message, at: position)
        }
        throw ProcessorXMLError(.processingInstructionForbidden, "processing instructions are not accepted", at: position)
    }

    /// `<?xml version="1.x" (encoding="UTF-8")? (standalone="yes|no")? ?>`
    mutating func parseDeclaration() throws(ProcessorXMLError) -> ProcessorXML.Document.Declaration {
        let start = position
        position += 5
        var pseudo: [(String, String)] = []
        while true {
            skipWhitespace()
            if hasPrefix("?>") {
                position += 2
                break
            }
            guard position < bytes.count, pseudo.count < 3 else {
                throw ProcessorXMLError(.malformed, "the XML declaration is not terminated by '?>'", at: start)
            }
            let name = try parseRawName()
            skipWhitespace()
            try expect(UInt8(ascii: "="), "'=' in the XML declaration")
            skipWhitespace()
            pseudo.append((name, try parseDeclarationValue()))
        }
        let names = pseudo.map(\.0)
        guard names.first == "version", Set(names).count == names.count,
            names.allSatisfy({ ["version", "encoding", "standalone"].contains($0) })
        else {
            throw ProcessorXMLError(.malformed, "the XML declaration must be version, then encoding and standalone", at: start)
        }
        let version = pseudo[0].1
        guard version.hasPrefix("1."), version.count > 2, version.dropFirst(2).allSatisfy(\.isASCIIDigit) else {
            throw ProcessorXMLError(.malformed, "only XML version 1.x is accepted", at: start)
        }
        let encoding = pseudo.first { $0.0 == "encoding" }?.1
        if let encoding, !["utf-8", "utf8"].contains(encoding.lowercased()) {
            throw ProcessorXMLError(
                .unsupportedEncoding, "encoding \(ProcessorXMLError.excerpt(encoding)) is not accepted; send UTF-8", at: start)
        }
        var standalone: Bool?
        if let value = pseudo.first(where: { $0.0 == "standalone" })?.1 {
            guard value == "yes" || value == "no" else {
                throw ProcessorXMLError(.malformed, "standalone must be yes or no", at: start)
            }
            standalone = value == "yes"
        }
        return ProcessorXML.Document.Declaration(version: version, encoding: encoding, standalone: standalone)
    }

    private mutating func parseDeclarationValue() throws(ProcessorXMLError) -> String {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
            throw ProcessorXMLError(.malformed, "XML declaration values must be quoted", at: position)
        }
        let quote = bytes[position]
        position += 1
        let start = position
        while position < bytes.count, bytes[position] != quote, position - start < 64 { position += 1 }
        guard position < bytes.count, bytes[position] == quote else {
            throw ProcessorXMLError(.malformed, "an XML declaration value is not terminated", at: start)
        }
        defer { position += 1 }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
