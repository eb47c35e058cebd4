/// Keeps the card data the relay forwarded out of the upstream's reply before the client gets it.
///
/// The upstream received the account number and cryptogram, so a compromised or careless one can
/// hand them back in any place its format has. What a parser yields from the client's reply must
/// carry neither, so every such place is handled, not only the fields where a processor puts them:
///
/// - Comments are dropped everywhere, outside the root element too: nothing reads them, and an
///   empty one can split a number (`445711<!---->9922390123`).
/// - An element's character data is scrubbed as one string, its text and CDATA children
///   concatenated, so a number split between nodes is found; attribute values one by one.
/// - The account number is found among the value's decimal digits in order, whatever separates
///   them (spaces, dashes, letters; Unicode digits read as their values), and all but its first six
///   and last four digits become `*`, the masking PCI DSS allows (``CardNumberMasking``). The
///   cryptogram is found with whitespace ignored (Base64 decoders skip it) and removed.
/// - What cannot be masked refuses the whole reply (``ProcessorMessageError/Code/echoedCardData``):
///   the account number among the digits of every string of the reply taken in document order (so
///   in a name, a namespace, a JSON number, or split across elements or fields), the cryptogram
///   across the reply's values. A false refusal needs an honest reply whose digits happen to spell
///   the whole account number in a row, which it has no reason to.
///
/// Other encodings (Base64, reversed, arithmetic on the digits) are beyond any filter: an upstream
/// that has the card data can always smuggle it in some form the client can decode.
struct ReplyCardDataScrubber {
    let format: ProcessorMessageError.Format
    /// The card data forwarded; nil for a passthrough, where only account-number fields are masked.
    let card: ForwardedCardData?

    private let accountDigits: [UInt32]
    private let cryptogramScalars: [UInt32]

    init(format: ProcessorMessageError.Format, card: ForwardedCardData?) {
        self.format = format
        self.card = card
        accountDigits = card.map { card in card.accountNumber.revealed.unicodeScalars.map { $0.value - 0x30 } } ?? []
        cryptogramScalars = card?.cryptogram.map { $0.revealed.unicodeScalars.map(\.value) } ?? []
    }

    // MARK: XML

    /// Drops every comment, scrubs every element's character data and attribute values (character
    /// data of the elements `holdsAccountNumber` picks is masked when it is any account number),
    /// then refuses the reply if the card data is still there in a form that cannot be masked.
    func scrub(
        _ document: inout ProcessorXML.Document, holdsAccountNumber: (ProcessorXML.Element) -> Bool = { _ in false }
    ) throws(ProcessorMessageError) {
        document.prolog.removeAll(where: \.isComment)
        document.epilog.removeAll(where: \.isComment)
        document.root.transformAll { element in
            element.children.removeAll(where: \.isComment)
            scrubCharacterData(of: &element, maskingAnyAccountNumber: holdsAccountNumber(element))
            for index in element.attributes.indices {
                element.attributes[index].value = scrubbed(element.attributes[index].value)
            }
        }
        try refuseUnmaskable(document)
    }

    /// The element's text and CDATA children scrubbed as one string, each child keeping its part.
    private func scrubCharacterData(of element: inout ProcessorXML.Element, maskingAnyAccountNumber: Bool) {
        var scalars: [Unicode.Scalar] = []
        var owners: [Int] = []
        for (index, child) in element.children.enumerated() {
            switch child {
            case .text(let text), .cdata(let text):
                for scalar in text.unicodeScalars {
                    scalars.append(scalar)
                    owners.append(index)
                }
            case .element, .comment:
                continue
            }
        }
        guard !scalars.isEmpty else { return }
        let result = masked(scalars, maskingAnyAccountNumber: maskingAnyAccountNumber)
        guard result != scalars.map(Optional.some) else { return }
        var parts: [Int: String.UnicodeScalarView] = [:]
        for (scalar, owner) in zip(result, owners) {
            if let scalar { parts[owner, default: .init()].append(scalar) }
        }
        var emptied = Set<Int>()
        for index in Set(owners) {
            let part = parts[index].map { String($0) } ?? ""
            if part.isEmpty { emptied.insert(index) }
            if case .cdata = element.children[index] {
                element.children[index] = .cdata(part)
            } else {
                element.children[index] = .text(part)
            }
        }
        element.children = element.children.enumerated().filter { !emptied.contains($0.offset) }.map(\.element)
    }

    // MARK: JSON

    /// Every string value scrubbed, in objects and arrays at any depth. Member names and numbers
    /// cannot be masked: ``refuseUnmaskable(_:)`` checks them, on the reply as it will be sent.
    func scrubbed(_ value: ProcessorJSON) -> ProcessorJSON {
        switch value {
        case .object(let members): .object(members.map { .init($0.key, scrubbed($0.value)) })
        case .array(let values): .array(values.map { scrubbed($0) })
        case .string(let text): .string(scrubbed(text))
        case .number, .bool, .null: value
        }
    }

    // MARK: Values

    /// One value scrubbed on its own (an attribute value, a JSON string).
    func scrubbed(_ text: String, maskingAnyAccountNumber: Bool = false) -> String {
        let scalars = Array(text.unicodeScalars)
        let result = masked(scalars, maskingAnyAccountNumber: maskingAnyAccountNumber)
        guard result != scalars.map(Optional.some) else { return text }
        return String(String.UnicodeScalarView(result.compactMap { $0 }))
    }

    /// `scalars` with the cryptogram's scalars removed (nil) and the account number's digits `*` but
    /// for those ``CardNumberMasking`` keeps; with `maskingAnyAccountNumber`, a value that is any account number (12–19 digits, spaces
    /// or dashes between them) is masked the same way.
    private func masked(_ scalars: [Unicode.Scalar], maskingAnyAccountNumber: Bool) -> [Unicode.Scalar?] {
        var result = scalars.map(Optional.some)
        if !cryptogramScalars.isEmpty {
            // Removing one can join the scalars around it into another: look again, a few times. A
            // reply nested deeper than that is built to be expensive; what is left of it is found
            // by the check on the whole reply, which refuses it.
            for _ in 0..<Self.maximumRounds {
                let positions = result.indices.filter { index in result[index].map { !Self.isWhitespace($0) } ?? false }
                let matches = Self.occurrences(of: cryptogramScalars, in: positions.map { result[$0]!.value })
                if matches.isEmpty { break }
                for start in matches {
                    for position in positions[start]...positions[start + cryptogramScalars.count - 1] { result[position] = nil }
                }
            }
        }
        if !accountDigits.isEmpty {
            for _ in 0..<Self.maximumRounds {
                let positions = result.indices.filter { result[$0].flatMap(Self.digitValue) != nil }
                let matches = Self.occurrences(of: accountDigits, in: positions.map { Self.digitValue(result[$0]!)! })
                if matches.isEmpty { break }
                for start in matches {
                    for offset in CardNumberMasking.hiddenDigits(count: accountDigits.count) { result[positions[start + offset]] = "*" }
                }
            }
        }
        if maskingAnyAccountNumber { maskAnyAccountNumber(&result) }
        return result
    }

    /// Passes over one value: each costs a linear search, so a value cannot cost more than this many.
    static let maximumRounds = 3

    /// Masks a value that is, whitespace aside, 12–19 digits with at most single spaces or dashes
    /// between them: an account number in a field that holds one, whoever's it is. One digit
    /// shorter than ``PrimaryAccountNumber/lengths`` on purpose: a reply is the upstream's, and a
    /// card number there may be a network's shortest (Maestro's 12), which is masked, never refused.
    private func maskAnyAccountNumber(_ result: inout [Unicode.Scalar?]) {
        let present = result.indices.filter { result[$0] != nil }
        guard let first = present.first(where: { !Self.isWhitespace(result[$0]!) }),
            let last = present.last(where: { !Self.isWhitespace(result[$0]!) })
        else { return }
        var digits: [Int] = []
        var previousWasSeparator = true
        for index in present where index >= first && index <= last {
            let scalar = result[index]!
            if Self.digitValue(scalar) != nil {
                digits.append(index)
                previousWasSeparator = false
            } else if (scalar == " " || scalar == "-") && !previousWasSeparator {
                previousWasSeparator = true
            } else {
                return
            }
        }
        guard (12...19).contains(digits.count), !previousWasSeparator else { return }
        for offset in CardNumberMasking.hiddenDigits(count: digits.count) { result[digits[offset]] = "*" }
    }

    // MARK: Refusing

    /// Refuses an XML reply whose strings, in document order, still spell the account number in
    /// their digits or the cryptogram in their values.
    func refuseUnmaskable(_ document: ProcessorXML.Document) throws(ProcessorMessageError) {
        guard card != nil else { return }
        var strings = Strings()
        if let declaration = document.declaration {
            strings.name(declaration.version)
            strings.name(declaration.encoding ?? "")
        }
        for node in document.prolog { strings.add(node) }
        strings.add(.element(document.root))
        for node in document.epilog { strings.add(node) }
        try refuse(strings)
    }

    /// Refuses a JSON reply whose member names, strings and numbers, in order, still spell the
    /// account number in their digits or the cryptogram in their values.
    func refuseUnmaskable(_ value: ProcessorJSON) throws(ProcessorMessageError) {
        guard card != nil else { return }
        var strings = Strings()
        strings.add(value)
        try refuse(strings)
    }

    private func refuse(_ strings: Strings) throws(ProcessorMessageError) {
        let digits = strings.all.compactMap(Self.digitValue)
        let values = strings.values.filter { !Self.isWhitespace($0) }.map(\.value)
        let everything = strings.all.filter { !Self.isWhitespace($0) }.map(\.value)
        let account = !accountDigits.isEmpty && !Self.occurrences(of: accountDigits, in: digits).isEmpty
        let cryptogram =
            !cryptogramScalars.isEmpty
            && !(Self.occurrences(of: cryptogramScalars, in: values) + Self.occurrences(of: cryptogramScalars, in: everything)).isEmpty
        guard account || cryptogram else { return }
        throw ProcessorMessageError(
            format, .echoedCardData, field: nil,
            "the upstream's reply carries the forwarded \(account ? "account number" : "cryptogram") where it cannot be masked "
                + "(in a name or number, or split across fields); the reply is withheld")
    }

    /// A reply's strings in document order, as the serialized reply has them: every one (names,
    /// namespace declarations, values) and the values alone (character data, attribute values,
    /// JSON strings and numbers).
    private struct Strings {
        var all: [Unicode.Scalar] = []
        var values: [Unicode.Scalar] = []

        mutating func name(_ text: String) { all += text.unicodeScalars }

        mutating func value(_ text: String) {
            all += text.unicodeScalars
            values += text.unicodeScalars
        }

        mutating func add(_ node: ProcessorXML.Node) {
            switch node {
            case .text(let text), .cdata(let text), .comment(let text):
                value(text)
            case .element(let element):
                add(element.name)
                for declaration in element.namespaceDeclarations {
                    name(declaration.prefix ?? "")
                    name(declaration.namespaceURI)
                }
                for attribute in element.attributes {
                    add(attribute.name)
                    value(attribute.value)
                }
                for child in element.children { add(child) }
            }
        }

        /// A name as written: its namespace comes from a declaration, added where it is declared,
        /// so a URI with digits is not repeated between every element's values.
        mutating func add(_ name: ProcessorXML.QualifiedName) {
            self.name(name.prefix ?? "")
            self.name(name.localName)
        }

        mutating func add(_ json: ProcessorJSON) {
            switch json {
            case .object(let members):
                for member in members {
                    name(member.key)
                    add(member.value)
                }
            case .array(let elements):
                for element in elements { add(element) }
            case .string(let text), .number(let text):
                value(text)
            case .bool, .null:
                break
            }
        }
    }

    // MARK: Matching

    /// A decimal digit's value (ASCII or any other script's), nil for anything else.
    private static func digitValue(_ scalar: Unicode.Scalar) -> UInt32? {
        if scalar.isASCII { return (0x30...0x39).contains(scalar.value) ? scalar.value - 0x30 : nil }
        guard scalar.properties.numericType == .decimal, let value = scalar.properties.numericValue else { return nil }
        return UInt32(value)
    }

    /// Unicode's White_Space, with ASCII answered without the property tables (most of a reply).
    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar == " " || (0x09...0x0D).contains(scalar.value) }
        return scalar.properties.isWhitespace
    }

    /// Where `pattern` starts in `text`, without overlaps (Knuth–Morris–Pratt: linear, so a long
    /// reply full of near matches costs no more than any other).
    static func occurrences(of pattern: [UInt32], in text: [UInt32]) -> [Int] {
        guard !pattern.isEmpty, text.count >= pattern.count else { return [] }
        var failure = [Int](repeating: 0, count: pattern.count)
        var length = 0
        for index in 1..<pattern.count {
            while length > 0 && pattern[index] != pattern[length] { length = failure[length - 1] }
            if pattern[index] == pattern[length] { length += 1 }
            failure[index] = length
        }
        var starts: [Int] = []
        var matched = 0
        for (index, value) in text.enumerated() {
            while matched > 0 && value != pattern[matched] { matched = failure[matched - 1] }
            if value == pattern[matched] { matched += 1 }
            if matched == pattern.count {
                starts.append(index - pattern.count + 1)
                matched = 0
            }
        }
        return starts
    }
}

extension ProcessorXML.Node {
    fileprivate var isComment: Bool {
        if case .comment = self { return true }
        return false
    }
}
