/// The namespace bindings in scope while parsing: a stack of declarations, popped per element.
struct XMLNamespaceScope {
    private var bindings: [(prefix: String?, uri: String)] = []
    private var counts: [Int] = []

    /// Opens an element's scope with its declarations.
    mutating func push(_ declarations: [ProcessorXML.NamespaceDeclaration]) {
        for declaration in declarations { bindings.append((declaration.prefix, declaration.namespaceURI)) }
        counts.append(declarations.count)
    }

    /// Closes the innermost element's scope.
    mutating func pop() {
        guard let count = counts.popLast() else { return }
        bindings.removeLast(count)
    }

    /// The namespace a prefix resolves to; for nil, the default namespace (nil when none or undeclared
    /// with `xmlns=""`). Returns `.undeclared` for a prefix with no binding.
    func resolve(_ prefix: String?) -> Resolution {
        if prefix == "xml" { return .namespace(ProcessorXML.xmlNamespaceURI) }
        for binding in bindings.reversed() where binding.prefix == prefix {
            return binding.uri.isEmpty ? .none : .namespace(binding.uri)
        }
        return prefix == nil ? .none : .undeclared
    }

    enum Resolution: Equatable {
        case namespace(String)
        case none
        case undeclared
    }
}
