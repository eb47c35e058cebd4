/// Reads simple values out of a parsed message for one format, turning structural problems into
/// ``ProcessorMessageError``s that name the field by its path (`authentication/user`).
struct XMLFieldReader {
    let format: ProcessorMessageError.Format
    let namespaceURI: String?

    var rules: FieldRules { FieldRules(format: format) }

    /// Parses a body, mapping parser errors to ``ProcessorMessageError/Code/malformedXML``.
    func parse(_ bytes: [UInt8], limits: ProcessorXML.Limits) throws(ProcessorMessageError) -> ProcessorXML.Document {
        do {
            return try ProcessorXML.parse(bytes, limits: limits)
        } catch {
            throw ProcessorMessageError.xml(format, error)
        }
    }

    /// The child elements in this reader's namespace; an element in any other namespace is refused
    /// unless `allowForeign` (then it is skipped, and kept in the DOM for forwarding).
    func elements(
        of element: ProcessorXML.Element, path: String, allowForeign: Bool = false
    ) throws(ProcessorMessageError) -> [ProcessorXML.Element] {
        var result: [ProcessorXML.Element] = []
        for child in element.childElements {
            if child.name.namespaceURI == namespaceURI {
                result.append(child)
            } else if !allowForeign {
                throw rules.unexpected("\(path)/\(child.name.localName)", in: path)
            }
        }
        return result
    }

    /// The text of an element that must hold a simple value, surrounding whitespace trimmed.
    func value(_ element: ProcessorXML.Element, path: String) throws(ProcessorMessageError) -> String {
        guard !element.hasChildElements else {
            throw ProcessorMessageError(format, .invalidFormat, field: path, "\(path) must be a simple value, not contain elements")
        }
        return element.text.trimmingSpaces
    }

    /// The only child with this name, or nil; a second one is a duplicate.
    func optionalChild(_ element: ProcessorXML.Element, _ name: String, path: String) throws(ProcessorMessageError) -> ProcessorXML.Element?
    {
        let matches = element.children(named: name, namespaceURI: namespaceURI)
        guard matches.count <= 1 else { throw rules.duplicate("\(path)/\(name)") }
        return matches.first
    }

    /// The only child with this name; missing or duplicated is an error naming it.
    func requiredChild(_ element: ProcessorXML.Element, _ name: String, path: String) throws(ProcessorMessageError) -> ProcessorXML.Element
    {
        guard let child = try optionalChild(element, name, path: path) else { throw rules.missing("\(path)/\(name)") }
        return child
    }

    /// The value of a required child, length-checked.
    func requiredValue(
        _ element: ProcessorXML.Element, _ name: String, path: String, min: Int = 1, max: Int
    ) throws(ProcessorMessageError) -> String {
        let child = try requiredChild(element, name, path: path)
        let text = try value(child, path: "\(path)/\(name)")
        try rules.length(text, "\(path)/\(name)", min: min, max: max)
        return text
    }

    /// The value of an optional child, length-checked when present.
    func optionalValue(
        _ element: ProcessorXML.Element, _ name: String, path: String, min: Int = 1, max: Int
    ) throws(ProcessorMessageError) -> String? {
        guard let child = try optionalChild(element, name, path: path) else { return nil }
        let text = try value(child, path: "\(path)/\(name)")
        try rules.length(text, "\(path)/\(name)", min: min, max: max)
        return text
    }

    /// A required attribute (no namespace), length-checked after XML Schema whitespace collapse.
    func requiredAttribute(
        _ element: ProcessorXML.Element, _ name: String, path: String, min: Int = 1, max: Int
    ) throws(ProcessorMessageError) -> String {
        guard let raw = element.attribute(name) else { throw rules.missing("\(path)/@\(name)") }
        let value = FieldRules.collapsed(raw)
        try rules.length(value, "\(path)/@\(name)", min: min, max: max)
        return value
    }

    func optionalAttribute(
        _ element: ProcessorXML.Element, _ name: String, path: String, min: Int = 0, max: Int
    ) throws(ProcessorMessageError) -> String? {
        guard let raw = element.attribute(name) else { return nil }
        try rules.length(raw, "\(path)/@\(name)", min: min, max: max)
        return raw
    }

    /// Children must be exactly `names` in order, those in `optional` may be absent. A misplaced
    /// element is named as out of order, an absent required one as missing.
    func checkSequence(
        _ element: ProcessorXML.Element, _ names: [String], optional: Set<String>, path: String
    ) throws(ProcessorMessageError) {
        let childNames = try elements(of: element, path: path).map(\.name.localName)
        var expected = names[...]
        for (position, name) in childNames.enumerated() {
            let later = childNames[(position + 1)...]
            if let index = expected.firstIndex(of: name) {
                for skipped in expected[..<index] {
                    if later.contains(skipped) { throw outOfOrder("\(path)/\(skipped)") }
                    if !optional.contains(skipped) { throw rules.missing("\(path)/\(skipped)") }
                }
                expected = expected[(index + 1)...]
            } else if names.contains(name) {
                if childNames.filter({ $0 == name }).count > 1 { throw rules.duplicate("\(path)/\(name)") }
                throw outOfOrder("\(path)/\(name)")
            } else {
                throw rules.unexpected("\(path)/\(name)", in: path)
            }
        }
        if let missing = expected.first(where: { !optional.contains($0) }) {
            throw rules.missing("\(path)/\(missing)")
        }
    }

    private func outOfOrder(_ field: String) -> ProcessorMessageError {
        ProcessorMessageError(format, .outOfOrder, field: field, "\(field) is out of the schema's sequence")
    }
}
