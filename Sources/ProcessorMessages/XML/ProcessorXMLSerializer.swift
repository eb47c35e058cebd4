import Foundation

/// Writes a DOM back as UTF-8 XML.
///
/// What was parsed comes back with its prefixes and declarations; what was added or renamed by an
/// edit gets the declarations it needs, so the output is always namespace-well-formed. Text is
/// escaped so that re-parsing yields the same DOM; characters XML cannot carry become U+FFFD.
enum ProcessorXMLSerializer {
    static func serialize(_ document: ProcessorXML.Document) -> [UInt8] {
        var writer = Writer()
        if let declaration = document.declaration {
            writer.append("<?xml version=\"\(declaration.version)\"")
            if let encoding = declaration.encoding { writer.append(" encoding=\"\(encoding)\"") }
            if let standalone = declaration.standalone { writer.append(" standalone=\"\(standalone ? "yes" : "no")\"") }
            writer.append("?>")
            if document.prolog.isEmpty { writer.append("\n") }
        }
        for node in document.prolog { writer.write(node) }
        writer.write(document.root)
        for node in document.epilog { writer.write(node) }
        return writer.output
    }

    private struct Writer {
        var output: [UInt8] = []
        var bindings: [(prefix: String?, uri: String)] = []

        mutating func append(_ text: String) { output.append(contentsOf: text.utf8) }

        mutating func write(_ node: ProcessorXML.Node) {
            switch node {
            case .element(let element): write(element)
            case .text(let text): appendEscaped(text, inAttribute: false)
            case .cdata(let text):
                append("<![CDATA[")
                append(sanitized(text).replacingOccurrences(of: "]]>", with: "]]]]><![CDATA[>"))
                append("]]>")
            case .comment(let text):
                var safe = sanitized(text)
                while safe.contains("--") { safe = safe.replacingOccurrences(of: "--", with: "- -") }
                if safe.hasSuffix("-") { safe += " " }
                append("<!--\(safe)-->")
            }
        }

        mutating func write(_ element: ProcessorXML.Element) {
            let mark = bindings.count
            var declarations = element.namespaceDeclarations
            for declaration in declarations { bindings.append((declaration.prefix, declaration.namespaceURI)) }
            let elementPrefix = element.name.namespaceURI == nil ? nil : element.name.prefix
            let wanted = element.name.namespaceURI ?? ""
            if resolve(elementPrefix) != wanted {
                declarations.append(.init(prefix: elementPrefix, namespaceURI: wanted))
                bindings.append((elementPrefix, wanted))
            }
            var attributeNames: [String] = []
            for attribute in element.attributes {
                attributeNames.append(attributeName(attribute.name, declarations: &declarations))
            }
            let name = elementPrefix.map { "\($0):\(element.name.localName)" } ?? element.name.localName
            append("<\(name)")
            for declaration in declarations {
                append(declaration.prefix.map { " xmlns:\($0)=\"" } ?? " xmlns=\"")
                appendEscaped(declaration.namespaceURI, inAttribute: true)
                append("\"")
            }
            for (attribute, qualified) in zip(element.attributes, attributeNames) {
                append(" \(qualified)=\"")
                appendEscaped(attribute.value, inAttribute: true)
                append("\"")
            }
            if element.children.isEmpty {
                append("/>")
            } else {
                append(">")
                for child in element.children { write(child) }
                append("</\(name)>")
            }
            bindings.removeLast(bindings.count - mark)
        }

        /// The attribute's name as written, declaring its prefix when the scope does not bind it.
        private mutating func attributeName(
            _ name: ProcessorXML.QualifiedName,
            declarations: inout [ProcessorXML.NamespaceDeclaration]
        ) -> String {
            guard let uri = name.namespaceURI else { return name.localName }
            if uri == ProcessorXML.xmlNamespaceURI { return "xml:\(name.localName)" }
            if let prefix = name.prefix, resolve(prefix) == uri { return "\(prefix):\(name.localName)" }
            var prefix = name.prefix ?? "ns"
            var suffix = 1
            while resolve(prefix) != nil, resolve(prefix) != uri {
                prefix = "ns\(suffix)"
                suffix += 1
            }
            if resolve(prefix) == nil {
                declarations.append(.init(prefix: prefix, namespaceURI: uri))
                bindings.append((prefix, uri))
            }
            return "\(prefix):\(name.localName)"
        }

        /// The URI a prefix is bound to in the output so far ("" for no default namespace).
        private func resolve(_ prefix: String?) -> String? {
            if prefix == "xml" { return ProcessorXML.xmlNamespaceURI }
            for binding in bindings.reversed() where binding.prefix == prefix { return binding.uri }
            return prefix == nil ? "" : nil
        }

        mutating func appendEscaped(_ text: String, inAttribute: Bool) {
            for scalar in text.unicodeScalars {
                switch scalar {
                case "&": append("&amp;")
                case "<": append("&lt;")
                case ">": append("&gt;")
                case "\"" where inAttribute: append("&quot;")
                case "\r": append("&#xD;")
                case "\t" where inAttribute: append("&#x9;")
                case "\n" where inAttribute: append("&#xA;")
                default:
                    let safe = XMLCharacterClasses.isChar(scalar.value) ? scalar : "\u{FFFD}"
                    output.append(contentsOf: String(Character(safe)).utf8)
                }
            }
        }

        private func sanitized(_ text: String) -> String {
            guard text.unicodeScalars.contains(where: { !XMLCharacterClasses.isChar($0.value) }) else { return text }
            var result = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                result.append(XMLCharacterClasses.isChar(scalar.value) ? scalar : "\u{FFFD}")
            }
            return String(result)
        }
    }
}
