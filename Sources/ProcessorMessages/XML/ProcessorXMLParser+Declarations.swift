extension ProcessorXMLParser {
    /// `<!-- ... -->`; `--` may not occur inside (XML 1.0 §2.5).
    mutating func parseComment() throws(ProcessorXMLError) -> String {
        let start = position
        position += 4
        let contentStart = position
        while position + 1 < bytes.count {
            if bytes[position] == UInt8(ascii: "-"), bytes[position + 1] == UInt8(ascii: "-") {
                guard position + 2 < bytes.count else { break }
                guard bytes[position + 2] == UInt8(ascii: ">") else {
                    throw ProcessorXMLError(.malformed, "'--' is not allowed inside a comment", at: position)
                }
                let content = normalizedLineEnds(bytes[contentStart..<position])
                position += 3
                return content
            }
            position += 1
            guard position - contentStart <= limits.maximumTextBytes else {
                throw ProcessorXMLError(.textLimitExceeded, "a comment exceeds \(limits.maximumTextBytes) bytes", at: start)
            }
        }
        throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends inside a comment", at: start)
    }

    /// `<![CDATA[ ... ]]>`
    mutating func parseCDATA() throws(ProcessorXMLError) -> String {
        let start = position
        position += 9
        let contentStart = position
        while position < bytes.count {
            if hasPrefix("]]>") {
                let content = normalizedLineEnds(bytes[contentStart..<position])
                position += 3
                return content
            }
            position += 1
            guard position - contentStart <= limits.maximumTextBytes else {
                throw ProcessorXMLError(.textLimitExceeded, "a CDATA section exceeds \(limits.maximumTextBytes) bytes", at: start)
            }
        }
        throw ProcessorXMLError(.unexpectedEndOfInput, "the document ends inside a CDATA section", at: start)
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
